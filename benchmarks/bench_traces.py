"""What logging every call as an MLflow trace costs a run: seconds per 1,000 calls.

Builds a hier-shaped job without any model: 10 books of about 80k tokens, each with 80
level-0 summaries, the merges above them (levels 1-3) and a post-processing call, so 100
calls per book with prompts of about 4 KB and answers of about 1.5 KB, as a 2,048-token chunk
run writes them. Then times ``runner.tracking.traces.log_traces`` (reading calls.jsonl, building
the spans, counting the sources' tokens, writing to a sqlite store) on a new run, median of 3.

    python benchmarks/bench_traces.py [--books 10] [--repeats 3]

A 98-book hier run makes about 6,000 such calls: multiply the figure by 6 for its cost.

``--quick``: one book, one repeat; seconds, to check that the benchmark still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# After the sys.path insert above, so that runner imports from this checkout.
from runner.api.types import (  # noqa: E402
    Document,
    DocumentOutcome,
    StrategyResult,
    TraceStep,
    WorkItem,
)
from runner.tracking.traces import log_traces  # noqa: E402
from runner.tracking.writer import Tracker, artifact_root  # noqa: E402

CHUNKS = 80
MERGES = ((1, 15), (2, 3), (3, 1))  # (level, merges): 80 -> 15 -> 3 -> 1
PROSE = "The settlers raised a mill by the river in the spring, and the town grew around it. "


def book(doc: str, start_ns: int) -> tuple[WorkItem, DocumentOutcome, list[dict[str, Any]]]:
    """One book's item, outcome (with its strategy trace) and calls.jsonl lines."""
    lines: list[dict[str, Any]] = []
    steps: list[TraceStep] = []

    def call(purpose: str, when: int, **detail: Any) -> None:
        call_id = f"{doc}-{len(lines):04d}"
        lines.append(
            {
                "call_id": call_id,
                "document": doc,
                "started_at": when,
                "role": "model",
                "model_alias": "bench",
                "purpose": purpose,
                "cached": False,
                "prompt_tokens": 1100,
                "completion_tokens": 350,
                "cached_prompt_tokens": 0,
                "cost_usd": 0.004,
                "latency_s": 3.5,
                "finish_reason": "stop",
                "request": {
                    "model": "openai/bench",
                    "api_base": None,
                    "temperature": 0.5,
                    "max_tokens": 500,
                    "messages": [
                        {"role": "user", "content": f"Summarize part {len(lines)}:\n" + PROSE * 48}
                    ],
                },
                "response": PROSE * 18,
            }
        )
        kind = {"hier/level0": "summarize", "hier/merge": "merge"}.get(purpose, "postprocess")
        steps.append(
            TraceStep(kind, call_id, {**detail, "call_ids": [call_id], "text": PROSE * 18})
        )

    for i in range(CHUNKS):
        call("hier/level0", start_ns + (i % 8) * 4_000_000_000, level=0, index=i)
    clock = start_ns + 40_000_000_000
    for level, merges in MERGES:
        for i in range(merges):
            call("hier/merge", clock, level=level, index=i, children=list(range(i * 5, i * 5 + 5)))
            clock += 4_000_000_000
    call("postprocess", clock)
    source = Document(doc, PROSE * 5000)  # about 80k tokens
    outcome = DocumentOutcome(doc, StrategyResult(PROSE * 20, tuple(steps), {}), {})
    return WorkItem(doc, source), outcome, lines


def once(
    tracker: Tracker, items: list[WorkItem], outcomes: list[DocumentOutcome], calls: Path
) -> float:
    """Seconds to log every book's trace to a new run of the store."""
    tracker.start(f"bench {time.strftime('%H:%M:%S')}", tags={})
    start = time.perf_counter()
    written = log_traces(tracker.client, tracker.run_id, items, outcomes, {}, calls)
    seconds = time.perf_counter() - start
    tracker.finish("FINISHED")
    assert written == len(items), "tracing failed; see the warning above"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--books", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one book, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.books, args.repeats = 1, 1
    with tempfile.TemporaryDirectory(prefix="bench-traces-") as tmp:
        built = [book(f"book-{b:02d}", time.time_ns() + b * 10**11) for b in range(args.books)]
        items, outcomes = [b[0] for b in built], [b[1] for b in built]
        calls = Path(tmp) / "calls.jsonl"
        with open(calls, "w", encoding="utf-8") as handle:
            for _, _, lines in built:
                handle.writelines(json.dumps(line) + "\n" for line in lines)
        n_calls, megabytes = sum(len(b[2]) for b in built), calls.stat().st_size / 1e6
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        tracker = Tracker(uri, "bench-traces", artifact_root(uri))
        times = [once(tracker, items, outcomes, calls) for _ in range(args.repeats)]
    per_1000 = statistics.median(times) * 1000 / n_calls
    print(
        f"{args.books} books, {n_calls} calls ({megabytes:.1f} MB of calls.jsonl), "
        f"runs: {', '.join(f'{t:.2f} s' for t in times)}"
    )
    print(
        f"log_traces: {per_1000:.2f} s per 1,000 calls (median of {args.repeats}); "
        f"a 98-book hier run (~6,000 calls): ~{per_1000 * 6:.0f} s"
    )


if __name__ == "__main__":
    main()
