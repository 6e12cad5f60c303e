"""BooookScore with the local judge: what prefix reuse saves, and what batching saves.

Scores one released summary of about 35 sentences (../shared/data/booookscore) with the
embedded Qwen2.5-Coder-0.5B judge and prints, from llama.cpp's own counts:

- prompt tokens actually evaluated per sentence (prompt - reused KV-cache tokens), against
  the naive count (the full prompt evaluated for every sentence), and their ratio
  (target: at least 5x fewer);
- judge calls per summary for batch sizes 1, 5 and 10 (measured, re-asks included, and
  the ideal ceil(n / k)).

    python benchmarks/bench_booookscore.py [--book flowerheart.epub] [--batch-sizes 1,5,10]

Skips cleanly (exit 0) when ../shared/data is absent. Takes minutes on a small CPU.

``--quick`` checks the set-up without running the model: three sentences at batch size 1
take minutes on a small CPU, too long for a check. It picks the summary,
builds the judge's gateway, finds the weights and imports llama_cpp; seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# After the sys.path insert above, so that these import from this checkout.
from metrics.booookscore import score  # noqa: E402
from runner.api.text import split_sentences  # noqa: E402
from runner.llm.call_log import CallLog  # noqa: E402
from runner.llm.gateway import Gateway, ModelSpec  # noqa: E402

RELEASED = REPO.parent / "shared" / "data" / "booookscore" / "claude-88000-hier.summaries.json"


def pick_summary(book: str | None, target: int = 35) -> tuple[str, str] | None:
    """(book id, summary): the named one, or the one whose sentence count is nearest 35."""
    if not RELEASED.exists():
        return None
    summaries: dict[str, str] = json.loads(RELEASED.read_text(encoding="utf-8"))
    if book:
        return book, summaries[book]
    best = min(sorted(summaries), key=lambda b: abs(len(split_sentences(summaries[b])) - target))
    return best, summaries[best]


def local_judge() -> Gateway:
    """The embedded model as a judge (temperature 0, no response cache: every call is real)."""
    spec = ModelSpec(
        name="local", model="local/qwen2.5-coder-0.5b-instruct", n_ctx=8192, temperature=0.0
    )
    return Gateway(spec, CallLog(None), cache=None, seed=0, role="judge")


def run(judge: Gateway, summary: str, batch_size: int, max_tokens: int) -> dict[str, float]:
    """One scoring of the summary; returns the metric's values plus wall time."""
    started = time.perf_counter()
    result = score(None, summary, judge, batch_size=batch_size, max_tokens=max_tokens)
    print(f"  batch_size={batch_size}: done in {time.perf_counter() - started:.0f}s", flush=True)
    values = dict(result.values)
    values["wall_s"] = time.perf_counter() - started
    return values


def report_prefix_reuse(values: dict[str, float]) -> None:
    """Evaluated vs naive prompt tokens per sentence, from llama.cpp's counts."""
    n = values["sentences"]
    prompt, reused = values["judge_prompt_tokens"], values["judge_cached_prompt_tokens"]
    evaluated = prompt - reused
    print(
        f"sentences: {n:.0f}   judge calls: {values['judge_calls']:.0f}   "
        f"re-asks: {values['judge_reasks']:.0f}   unparsed: {values['unparsed_sentences']:.0f}"
    )
    print(f"naive  prompt tokens evaluated per sentence (full prompt each time): {prompt / n:8.1f}")
    print(
        f"reused prompt tokens evaluated per sentence (llama.cpp KV reuse):    {evaluated / n:8.1f}"
    )
    ratio = prompt / evaluated if evaluated else math.inf
    verdict = "meets" if ratio >= 5 else "MISSES"
    print(f"ratio: {ratio:.1f}x fewer tokens evaluated ({verdict} the 5x target)")
    print(
        f"BooookScore {values['score']:.1f}   wall {values['wall_s']:.1f}s "
        f"({values['wall_s'] / n:.2f}s per sentence)"
    )


def print_row(n: int, k: int, v: dict[str, float]) -> None:
    """One line of the calls-per-summary table, printed as soon as it is measured."""
    evaluated = v["judge_prompt_tokens"] - v["judge_cached_prompt_tokens"]
    print(
        f"{k:>5} {math.ceil(n / k):>6} {v['judge_calls']:>9.0f} {v['judge_reasks']:>8.0f} "
        f"{v['unparsed_sentences']:>9.0f} {evaluated:>14.0f} {v['judge_completion_tokens']:>10.0f} "
        f"{v['wall_s']:>7.1f} {v['score']:>6.1f}",
        flush=True,
    )


def check_setup(book: str, sentences: int) -> int:
    """Quick mode: the summary, the judge's gateway, the weights; no model run."""
    import llama_cpp

    from runner.llm.local.weights import default_gguf_path

    judge = local_judge()
    weights = default_gguf_path()  # assembled and verified on first use
    print(
        f"quick: set-up checked, model not run: {book} ({sentences} sentences); judge "
        f"{judge.spec.model}; weights {weights.name}; llama_cpp {llama_cpp.__version__}"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--book", help="book id in the released hier file (default: ~35 sentences)")
    parser.add_argument("--batch-sizes", default="1,5,10", help="comma-separated batch sizes")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=256,
        help="answer cap per sentence (the metric's max_tokens)",
    )
    parser.add_argument("--quick", action="store_true", help="check the set-up, no model run")
    args = parser.parse_args()
    picked = pick_summary(args.book)
    if picked is None:
        print(f"skipped: {RELEASED} is absent (fresh clone without ../shared/data)")
        return 0
    book, summary = picked
    sizes = [int(k) for k in args.batch_sizes.split(",")]
    n = len(split_sentences(summary))
    if args.quick:
        return check_setup(book, n)
    print(f"summary: {book} (claude-88000-hier), {n} sentences", flush=True)
    judge = local_judge()
    results = {}
    for k in sizes:
        results[k] = run(judge, summary, k, args.max_tokens)
        if k == 1:
            print("\n== per-sentence mode (the paper's), prefix reuse ==")
            report_prefix_reuse(results[k])
            print(flush=True)
    print("== judge calls per summary ==")
    print(
        f"{'batch':>5} {'ideal':>6} {'measured':>9} {'re-asks':>8} {'unparsed':>9} "
        f"{'evaluated tok':>14} {'generated':>10} {'wall s':>7} {'score':>6}"
    )
    for k, v in results.items():
        print_row(n, k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
