"""SummIt wall time against its critical-path bound, through the whole runner.

Every call is answered by a loopback OpenAI-compatible server (its own process) after a
fixed latency (250 ms). The evaluator asks for one more Add until the iteration a document
stops at (5, 4 and 3 evaluations for the three sample documents), so a document makes
1 draft + n evaluations + (n - 1) revisions = 2n calls, one after another, and its bound
is 2n latencies. Documents run concurrently, so the job's bound is the slowest
document's: 10 x 250 ms.

target: the documents' wall time <= 1.2 x bound (median of --repeat runs).

    python benchmarks/bench_summit.py [--latency 0.25] [--repeat 3] [--quick]

``--quick``: 50 ms per call, one run, counted although it pays litellm's import; seconds, to
check that the benchmark still runs (its ratio is not the figure).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
STOP_AT = {"Copper": 5, "Lighthouse": 4, "Verrin": 3}
"""A word of each sample story's title -> the evaluation that says <STOP>."""


def answer(request: dict[str, Any]) -> str:
    """Draft names the story; each revision adds a sentence; the evaluator stops at STOP_AT."""
    messages = request["messages"]
    last = str(messages[-1]["content"])
    if str(messages[0]["content"]).startswith("You are a summary evaluator"):
        summary = last.split("Summary:\n", 1)[1].split("\n\n", 1)[0]
        stop_at = next(n for word, n in STOP_AT.items() if word in summary)
        scores = "Scores: 1: 0.1, 2: 0.1, 3: 0.2, 4: 0.4, 5: 0.2"
        if summary.count("Revised.") + 1 >= stop_at:
            return f"{scores}\n<STOP>"
        return f"{scores}\n- Add the information of the ending"
    if last.startswith("Refine:"):
        return str(messages[2]["content"]) + " Revised."
    title = last.split("Document:\n", 1)[1].split("\n", 1)[0]
    return f"A summary of {title}."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="50 ms per call, one counted run")
    args = parser.parse_args()
    if args.quick:
        args.latency, args.repeat = 0.05, 1
    from bench_strategies import loopback_server

    from runner.config.run_config import build_run_config
    from runner.run.lifecycle import run_experiment
    from tests.runner.config.test_config import composed

    bound = 2 * max(STOP_AT.values()) * args.latency
    walls = []
    with loopback_server(args.latency, answer) as url, tempfile.TemporaryDirectory() as tmp:
        # The first run pays litellm's one-time import: not counted (but for --quick).
        warm_up = 0 if args.quick else 1
        for n in range(args.repeat + warm_up):
            items = [
                "strategy=summit",
                "model=openai_compatible",
                f"model.api_base={url}",
                "model.concurrency=8",
                "metrics=none",
                "progress=false",
                "cache.enabled=false",
                f"tracking.uri=sqlite:///{tmp}/mlflow.db",
            ]
            result = run_experiment(build_run_config(composed(*items), tuple(items)))
            assert result.totals.calls == sum(2 * k for k in STOP_AT.values()), result.totals.calls
            if n >= warm_up:
                walls.append(result.timings["documents_s"])
    wall = statistics.median(walls)
    print(
        f"summit on the 3 sample documents, {args.latency * 1000:.0f} ms per call, "
        f"{args.repeat} runs"
    )
    print(
        f"  bound (slowest document: {2 * max(STOP_AT.values())} calls in sequence): {bound:.2f} s"
    )
    print(f"  documents wall: median {wall:.2f} s  (runs: {', '.join(f'{w:.2f}' for w in walls)})")
    print(f"  ratio wall / bound: {wall / bound:.3f} (target <= 1.2)")


if __name__ == "__main__":
    main()
