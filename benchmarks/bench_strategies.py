"""Wall time of hier and incremental against their critical-path bound.

Runs both strategies on the 57k-token book from ../shared/data through the real gateway
against a loopback OpenAI-compatible server answering every call after a fixed latency
(250 ms), with the gateway's concurrency at 16. The bound comes from each run's trace:

- hier: level 0 needs max(longest per-chunk chain, ceil(level-0 calls / concurrency))
  rounds; then every merge attempt, level by level, is one round (merges within a level
  are chained by the prior context), plus compressions and the clean-up call;
- incremental: every call is one round (each update needs the previous summary).

bound = rounds x latency; target: wall <= 1.25 x bound. (The authors' reference code
makes every call one after another: its hier time would be all calls x latency.)

    python benchmarks/bench_strategies.py [--chunk 2048] [--latency 0.25] [--concurrency 16]

``--quick``: the book's first 8,000 tokens in chunks of 1,024 at 50 ms per call, one run per
strategy; seconds, to check that the benchmark still runs (the ratios are not the figures).
"""

from __future__ import annotations

import argparse
import functools
import math
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BOOK = REPO / ".." / "shared" / "data" / "reminiscences-of-pioneer-days-in-st-paul.txt"
SENTENCES = (
    "The settlers raised a mill by the river in the spring.",
    "A steamboat brought news, flour and three new families.",
    "The old trader told stories of the fur posts upriver.",
    "Winter closed the roads, and the town kept to its stoves.",
)
QUICK_TOKENS = 8000


@functools.lru_cache(maxsize=64)
def prose(limit: int) -> str:
    """Terminated sentences up to about ``limit`` tokens; cached, so the server stays cheap."""
    from runner.api.text import count_tokens

    out: list[str] = []
    while count_tokens(" ".join(out)) < limit - 15:
        out.append(SENTENCES[len(out) % len(SENTENCES)])
    return " ".join(out)


def answer(request: dict[str, Any]) -> str:
    """A terminated answer at 60% of max_tokens; compressions hit their word target."""
    prompt = str(request["messages"][-1]["content"])
    if "Your task is to edit the book summary" in prompt:
        return prompt.split("---\n", 1)[1].rsplit("\n---", 1)[0]
    if "condense it to less than" in prompt:
        target = int(prompt.split("condense it to less than ", 1)[1].split()[0])
        return " ".join(["word"] * (target - 1) + ["end."])
    return prose(int((request.get("max_tokens") or 900) * 0.6))


def _serve(
    latency: float, urls: Any, stop: Any, responder: Callable[[dict[str, Any]], str]
) -> None:
    from tests.helpers.fake_server import FakeOpenAIServer

    with FakeOpenAIServer(responder, latency_s=latency) as server:
        urls.put(server.url)
        stop.wait()


@contextmanager
def loopback_server(
    latency: float, responder: Callable[[dict[str, Any]], str] = answer
) -> Iterator[str]:
    """The fake server in its own process, as a real server would be: in-process, its token
    counting and JSON work would compete with the client for the GIL and inflate wall time."""
    urls: Any = multiprocessing.Queue()
    stop = multiprocessing.Event()
    process = multiprocessing.Process(
        target=_serve, args=(latency, urls, stop, responder), daemon=True
    )
    process.start()
    try:
        yield str(urls.get(timeout=60))
    finally:
        stop.set()
        process.join(timeout=10)


def rounds_hier(trace: list[Any], concurrency: int) -> int:
    """Critical path of a hier trace, in calls."""
    level0 = [s.detail["attempts"] for s in trace if s.kind == "summarize"]
    width = max(max(level0), math.ceil(sum(level0) / concurrency))
    chained = sum(s.detail["attempts"] for s in trace if s.kind in ("merge", "compress"))
    return width + chained + sum(1 for s in trace if s.kind == "postprocess")


def rounds_incremental(trace: list[Any], concurrency: int) -> int:
    """Critical path of an incremental trace: every call depends on the one before."""
    updates = sum(1 for s in trace if s.kind == "update")
    compressions = sum(s.detail["attempts"] for s in trace if s.kind == "compress")
    return updates + compressions + sum(1 for s in trace if s.kind == "postprocess")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk", type=int, default=2048)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="runs per strategy; median reported")
    parser.add_argument("--quick", action="store_true", help="a slice of the book, one run each")
    args = parser.parse_args()
    if args.quick:
        args.chunk, args.latency, args.repeat = 1024, 0.05, 1
    if not BOOK.exists():
        print(f"skipped: {BOOK.resolve()} is absent (fresh clone without ../shared/data)")
        return 0

    from runner.api.chunking import split_into_chunks
    from runner.api.text import split_sentences
    from runner.llm.call_log import CallLog
    from runner.llm.gateway import Gateway, ModelSpec
    from runner.llm.retry import RetryPolicy
    from strategies import hier, incremental

    text = BOOK.read_text(encoding="utf-8")
    if args.quick:
        text = text[: QUICK_TOKENS * 4]  # about 4 characters per token in English prose
    chunks = split_into_chunks(text, args.chunk)
    split_sentences("Warm the sentence splitter up. It loads NLTK.")
    cases: list[tuple[str, Callable[..., Any], Callable[[list[Any], int], int]]] = [
        ("hier", hier.summarize, rounds_hier),
        ("incremental", incremental.summarize, rounds_incremental),
    ]
    print(
        f"book: {sum(c.n_tokens for c in chunks)} tokens, {len(chunks)} chunks of <= {args.chunk}; "
        f"latency {args.latency * 1000:.0f} ms/call, concurrency {args.concurrency}; "
        f"wall = median of {args.repeat} runs (min in brackets)"
    )
    print(
        f"{'strategy':<12} {'calls':>5} {'rounds':>6} {'wall s':>15} {'bound s':>8} {'ratio':>6}  "
        f"{'sequential s':>12}"
    )
    worst = 0.0
    with loopback_server(args.latency) as url:
        spec = ModelSpec(
            name="fake",
            model="openai/fake",
            api_base=url,
            context_window=8192,
            temperature=0.5,
            concurrency=args.concurrency,
            retry=RetryPolicy(max_attempts=2, base_delay_s=0.01),
        )
        llm = Gateway(spec, CallLog(None), cache=None)
        # Room for a sentence: the responder answers 60% of max_tokens, and the gateway refuses
        # an empty answer.
        llm.complete("warm up litellm", max_tokens=100)
        for name, summarize, rounds_of in cases:
            walls, bounds = [], []
            for _ in range(max(1, args.repeat)):
                started = time.perf_counter()
                result = summarize(chunks, llm)
                walls.append(time.perf_counter() - started)
                bounds.append(rounds_of(list(result.trace), args.concurrency) * args.latency)
            wall, bound = statistics.median(walls), max(bounds)
            calls = int(result.counters["calls"])
            worst = max(worst, wall / bound)
            print(
                f"{name:<12} {calls:>5} {round(bound / args.latency):>6} "
                f"{wall:>7.2f} [{min(walls):5.2f}] {bound:>8.2f} {wall / bound:>6.2f}  "
                f"{calls * args.latency:>12.2f}"
            )
    print(f"target: ratio <= 1.25 for both: {'met' if worst <= 1.25 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
