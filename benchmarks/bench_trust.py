"""How far to trust a judge, measured on StorySumm's release (../shared/data).

Part 1, a panel of three replayed raters: the release's CoT predictions of Claude-3, GPT-4
and Mixtral (``predicted_labels/*/cot.json``) as the members of a panel over the 96
summaries, pooled by majority as ``judges=[...]`` pools a label. Printed: Krippendorff's
alpha among the three (nominal, ``runner.reliability.agreement``), and Cohen's kappa and
balanced accuracy against people's labels for each member and for the panel (what
``report meta=true`` gives a panel run's rows).

Part 2, PPI against people's labels alone: for n = 24 and 48 people's labels drawn at
random (DRAWS times), the rest of the 96 judged by GPT-4 CoT only, the width of the 95% CI
of the % faithful by PPI++ (``runner.api.meta.anchored_mean``) over the width of the
classical CI of the n labels alone; the medians of the ratio and of "the labels the judge
was worth", and how often each CI covers the % faithful of all 96 people's labels.

    python benchmarks/bench_trust.py [--draws N] [--quick]

``--quick``: 20 draws.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from metrics.faithfulness.given import read  # noqa: E402
from metrics.faithfulness.releases import read_storysumm  # noqa: E402
from runner.api.meta import Confusion, anchored_mean, kappa  # noqa: E402
from runner.reliability.agreement import alpha  # noqa: E402

STORYSUMM = ROOT.parent / "shared" / "data" / "faithfulness" / "storysumm"
RATERS = {
    "Claude-3": "claude-3-opus-20240229/cot.json",
    "GPT-4": "gpt-4-0125-preview/cot.json",
    "Mixtral": "mixtral/cot.json",
}


def confusion(pairs: list[tuple[float, float]]) -> Confusion:
    """(rater, person) labels, faithful the positive class."""
    tp = sum(1 for r, p in pairs if r and p)
    fp = sum(1 for r, p in pairs if r and not p)
    fn = sum(1 for r, p in pairs if not r and p)
    tn = sum(1 for r, p in pairs if not r and not p)
    return Confusion(tp, fp, fn, tn)


def balanced(c: Confusion) -> float:
    return 100 * (c.tp / (c.tp + c.fn) + c.tn / (c.tn + c.fp)) / 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="20 draws")
    args = parser.parse_args()
    if args.quick:
        args.draws = 20
    if not STORYSUMM.is_dir():
        print(f"skipped: StorySumm's release is not at {STORYSUMM}; nothing measured")
        return 0
    entries, _ = read_storysumm(STORYSUMM / "storysumm.json")
    people = {e.key: 1.0 if e.label else 0.0 for e in entries}
    labels = {
        name: {
            k: e.values["faithful"]
            for k, e in read(STORYSUMM / "predicted_labels" / f).entries.items()
        }
        for name, f in RATERS.items()
    }
    docs = [k for k in people if all(k in v for v in labels.values())]
    panel = {k: float(sum(v[k] for v in labels.values()) >= 2) for k in docs}
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {len(docs)} summaries with all three raters")
    rows = [[labels[name][k] for k in docs] for name in RATERS]
    found = alpha(rows, "label")
    print(
        f"alpha among the three raters: {found.alpha:.3f} [{found.low:.3f}, {found.high:.3f}] "
        f"({found.level}, {found.units} summaries)"
    )
    for name, values in [*labels.items(), ("panel (majority)", panel)]:
        c = confusion([(values[k], people[k]) for k in docs])
        print(f"  {name:<18} kappa {kappa(c):.3f}  balanced accuracy {balanced(c):.1f}%")
    truth = 100 * statistics.mean(people[k] for k in docs)
    judge = labels["GPT-4"]
    print(f"people's % faithful over all {len(docs)}: {truth:.1f}")
    rng = random.Random(0)
    for n in (24, 48):
        ratios, worth, covered_ppi, covered_classical = [], [], 0, 0
        for _ in range(args.draws):
            picked = set(rng.sample(docs, n))
            result = anchored_mean(
                [people[k] for k in picked],
                [judge[k] for k in picked],
                [judge[k] for k in docs if k not in picked],
                0.95,
            )
            ppi, classical = result.ppi, result.classical
            ratios.append((ppi.high - ppi.low) / (classical.high - classical.low))
            worth.append(result.worth)
            covered_ppi += ppi.low <= truth / 100 <= ppi.high
            covered_classical += classical.low <= truth / 100 <= classical.high
        print(
            f"n={n}: PPI CI width / classical CI width, median {statistics.median(ratios):.2f} "
            f"(of {args.draws} draws); labels the judge was worth, median "
            f"{statistics.median(worth):.1f}; covers people's % of all 96: PPI "
            f"{100 * covered_ppi / args.draws:.0f}%, "
            f"classical {100 * covered_classical / args.draws:.0f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
