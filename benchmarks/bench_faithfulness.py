"""The faithfulness claims rater: claims judged in parallel, and the source prefix reused.

Part 1 (always): one summary's K claims judged through the real gateway (litellm, HTTP) by
a loopback OpenAI-compatible server that takes a fixed latency per call, at judge
concurrency C. The critical-path bound is ceil(K / C) x one call's time (the claims depend
on nothing but the source), the one call measured in the same run (a summary of one claim:
the server's latency plus the client's own time per call, which a loaded machine
stretches); the median wall time of N runs over it must be <= 1.1. The bound from the
server's latency alone is printed too.

Part 2 (unless --skip-local): the embedded llama.cpp judge (Qwen2.5-Coder-0.5B, CPU) on a
~600-word story and 5 claims, with the metric's order (instruction and story first, the
claim last) against a claim-first order made here (a bench-only flag: the claim's part
before the story): prompt tokens llama.cpp evaluated per claim (its own count,
``runner/llm/local/perf.py``), not reused from its KV cache, and the ratio.

    python benchmarks/bench_faithfulness.py [--skip-local] [--quick]

``--quick``: part 1 once, K=8, its ratio printed, not enforced; part 2 not run.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# After the sys.path insert above, so that these import from this checkout.
import metrics.faithfulness as faithfulness  # noqa: E402
from metrics.faithfulness import prompts as faithfulness_prompts  # noqa: E402
from runner.api.metric import ScoreInput  # noqa: E402
from runner.api.text import split_sentences  # noqa: E402
from runner.api.types import Document, Message  # noqa: E402
from runner.data.loaders import load_documents  # noqa: E402
from runner.llm.call_log import CallLog  # noqa: E402
from runner.llm.gateway import Gateway  # noqa: E402
from runner.llm.local import perf  # noqa: E402
from runner.llm.retry import RetryPolicy  # noqa: E402
from runner.llm.spec import ModelSpec  # noqa: E402
from tests.helpers.fake_server import FakeOpenAIServer  # noqa: E402

LATENCY_S = 0.5
LIMIT = 1.1
LOCAL = ModelSpec(
    name="local",
    model="local/qwen2.5-coder-0.5b-instruct",
    temperature=0.0,
    concurrency=1,
    max_tokens=512,
)
"""The embedded judge of part 2."""


def answer(request: dict[str, Any]) -> str:
    """The loopback judge: every claim True."""
    return "True"


def load() -> str:
    """The machine's 1-minute load average (other processes slow the wall time)."""
    return f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


def part_one(claims: int, concurrency: int, repeat: int) -> float:
    """Median wall time over the critical-path bound for ``claims`` claims."""
    story = Document("story", " ".join(f"Sentence {i} of the story." for i in range(200)))
    given = tuple(f"Claim number {i} about the story." for i in range(claims))
    with FakeOpenAIServer(answer, latency_s=LATENCY_S) as server:
        spec = ModelSpec(
            name="loopback",
            model="openai/loopback",
            api_base=server.url,
            context_window=8192,
            concurrency=concurrency,
            retry=RetryPolicy(max_attempts=1),
        )
        judge = Gateway(spec, CallLog(None, keep=True), None, role="judge", temperature=0.0)
        metric = faithfulness.setup(judge, method="claims")
        metric.score_input(
            ScoreInput(story, "warm-up", "", {"claims": ("Warm-up.",)})
        )  # litellm's imports
        walls, singles = [], []
        for index in range(repeat):
            start = time.perf_counter()
            one = {"claims": (f"Single claim {index}.",)}
            metric.score_input(ScoreInput(story, "One claim.", "", one))
            singles.append(time.perf_counter() - start)
            start = time.perf_counter()
            result = metric.score_input(ScoreInput(story, "A summary.", "", {"claims": given}))
            walls.append(time.perf_counter() - start)
            assert result.values["supported"] == 1.0
        peak = server.max_in_flight
    single = statistics.median(singles)
    bound = math.ceil(claims / concurrency) * single
    wall = statistics.median(walls)
    print(
        f"Part 1: K={claims} claims, concurrency C={concurrency}, {LATENCY_S * 1000:.0f} ms per "
        f"call, median of {repeat}; load {load()}"
    )
    print(
        f"  one call {single:.3f} s; wall {wall:.2f} s, bound ceil(K/C) x one call {bound:.2f} s, "
        f"ratio {wall / bound:.2f} (limit {LIMIT}), peak requests in flight {peak}"
    )
    latency_bound = math.ceil(claims / concurrency) * LATENCY_S
    print(f"  against ceil(K/C) x latency ({latency_bound:.2f} s): {wall / latency_bound:.2f}")
    return wall / bound


def claim_first(self: Any, story: str, claim: str) -> list[Message]:
    """Bench-only order: the claim's part before the story (no prefix shared by claims)."""
    instruction = Message("user", self.text("claims_instruction.txt"))
    head = f"Statement:\n{claim}\n\n"
    tail = (
        f"Context:\n{story}\n\nQuestion: Based on the context provided, is the above statement "
        "True or False?\n\nAnswer:"
    )
    return [instruction, Message("user", head), Message("user", tail)]


def part_two() -> None:
    """Prompt tokens evaluated per claim, source first against claim first."""
    story_doc = load_documents("sample")[0]
    words = story_doc.text.split()
    story = Document("story", " ".join(words[:600]))
    claims = tuple(split_sentences(story.text)[:5])
    print(
        f"\nPart 2: embedded llama.cpp judge, {story_doc.doc_id} cut to 600 words, "
        f"{len(claims)} claims; load {load()}"
    )
    evaluated = {}
    original = faithfulness_prompts.Prompts.claim
    for order in ("source first", "claim first"):
        if order == "claim first":
            faithfulness_prompts.Prompts.claim = claim_first  # type: ignore[method-assign]
        try:
            judge = Gateway(LOCAL, CallLog(None, keep=True), None, role="judge", temperature=0.0)
            metric = faithfulness.setup(judge, method="claims")
            warm = ScoreInput(Document("w", "Warm up."), "w", "w", {"claims": ("w",)})
            metric.score_input(warm)  # load
            before = perf.TOTALS.prompt_tokens_evaluated
            start = time.perf_counter()
            result = metric.score_input(ScoreInput(story, "A summary.", "", {"claims": claims}))
            wall = time.perf_counter() - start
            evaluated[order] = (perf.TOTALS.prompt_tokens_evaluated - before) / len(claims)
            sent = sum(e["prompt_tokens"] for e in judge.call_log.entries[-len(claims) :])
        finally:
            faithfulness_prompts.Prompts.claim = original  # type: ignore[method-assign]
        print(
            f"  {order:<13} prompt tokens sent per claim {sent / len(claims):7.1f}, evaluated "
            f"per claim {evaluated[order]:7.1f}, wall {wall:6.1f} s, "
            f"supported {result.values['supported']:.2f}"
        )
    ratio = evaluated["claim first"] / evaluated["source first"]
    print(f"  claim-first / source-first evaluated tokens per claim: {ratio:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-local", action="store_true", help="only the loopback part")
    parser.add_argument("--quick", action="store_true", help="part 1 once, K=8; no part 2")
    args = parser.parse_args()
    if args.quick:
        ratio = part_one(claims=8, concurrency=4, repeat=1)
    else:
        ratio = part_one(claims=16, concurrency=4, repeat=5)
    if not args.quick and not args.skip_local:
        part_two()
    if ratio > LIMIT and not args.quick:  # quick mode checks that it runs (one noisy pass)
        sys.exit(f"claims judged at {ratio:.2f}x the critical-path bound (limit {LIMIT})")


if __name__ == "__main__":
    main()
