"""The article's LLM-judged metrics: judge calls, wall time against the critical path, and
what prefix reuse saves with the local judge.

Part 1 (always): alignment, coverage, vagueness and repetitiveness score one document with
a scripted judge behind the real gateway that takes 250 ms per call (no cache), at judge
concurrency 1 and 8. For each it prints the judge calls, the wall time, and the
critical-path bound: the longest chain of calls that must wait for one another (e.g.
coverage: questions -> answers -> scores), each chain step taking
ceil(calls in that step / concurrency) x 250 ms. A ratio near 1 means the metric's calls
overlap as much as their dependencies allow.

Part 2 (unless --skip-local): the same four metrics with the embedded llama.cpp judge on
the first sample story and a three-sentence summary of it: prompt tokens evaluated with
prefix reuse (prompt - tokens llama.cpp kept in its KV cache) against without (every
prompt evaluated whole), from llama.cpp's own counts, and the wall time.

    python benchmarks/bench_article_metrics.py [--skip-local] [--quick]

``--quick``: part 1 once at concurrency 8; part 2's set-up is checked without running the
model (even its cheapest metric, repetitiveness, takes minutes on a small CPU):
the story and summary, the judge's gateway, the weights, llama_cpp; seconds.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# After the sys.path insert above, so that these import from this checkout.
from metrics import alignment, coverage, repetitiveness, vagueness  # noqa: E402
from runner.api.text import split_sentences  # noqa: E402
from runner.api.types import Document, Message  # noqa: E402
from runner.data.loaders import load_documents  # noqa: E402
from runner.llm.cache import ResponseCache  # noqa: E402
from runner.llm.call_log import CallLog  # noqa: E402
from runner.llm.gateway import Gateway  # noqa: E402
from runner.llm.spec import ModelSpec  # noqa: E402
from tests.helpers.scripted_llm import scripted_llm  # noqa: E402
from tests.metrics import article_judge  # noqa: E402
from tests.metrics.test_repetitiveness import duplicate_judge  # noqa: E402
from tests.metrics.test_vagueness import rule_judge  # noqa: E402

LATENCY_S = 0.25
LOCAL = ModelSpec(
    name="local",
    model="local/qwen2.5-coder-0.5b-instruct",
    temperature=0.0,
    concurrency=1,
    max_tokens=512,
)
"""The embedded judge of part 2."""
VAGUE = rule_judge()


def script(messages: list[Message], options: dict[str, Any]) -> str:
    """A reasonable judge for every metric here, 250 ms per answer."""
    time.sleep(LATENCY_S)
    purpose = options["purpose"]
    if purpose.startswith(("alignment", "coverage")):
        return article_judge.reasonable(messages, options)
    if purpose == "vagueness":
        return VAGUE(messages, options)
    return duplicate_judge(messages, options)


def chain_bound(steps: list[int], concurrency: int) -> float:
    """Seconds for dependent steps of ``n`` independent calls each, ``concurrency`` at a time."""
    return sum(math.ceil(n / concurrency) for n in steps if n) * LATENCY_S


def steps_of(name: str, values: dict[str, float], concurrency: int) -> list[int]:
    """The metric's dependent steps (calls per step), from its own counts.

    run_units makes one first call alone (so a provider caches the shared prefix) before
    the rest go in parallel; that first call is its own step.
    """

    def fanned(n: int) -> list[int]:
        return [1, n - 1] if concurrency > 1 and n > 1 else [n]

    if name == "alignment":
        return [1, *fanned(int(values["claims"]))]
    if name == "coverage":
        answered = int(values["questions"] - values["idk_answers"])
        return [
            *fanned(int(values["chunks"]) if "chunks" in values else 1),
            *fanned(int(values["questions"])),
            *fanned(answered),
        ]
    if name == "repetitiveness":
        return fanned(int(values["samples"]))
    return [int(values["judge_calls"])]  # vagueness: one batched call (re-asks follow it)


def part_one(
    document: Document, summary: str, concurrencies: tuple[int, ...] = (1, 8), repeat: int = 3
) -> None:
    print(f"Part 1: scripted judge, {LATENCY_S * 1000:.0f} ms per call, one document")
    print(f"{'metric':<16}{'conc':>5}{'calls':>7}{'wall s':>9}{'bound s':>9}{'ratio':>7}")
    builders: dict[str, Callable[[Gateway], Any]] = {
        "alignment": lambda j: alignment.setup(j),
        "coverage": lambda j: coverage.setup(j),
        "vagueness": lambda j: vagueness.setup(j),
        "repetitiveness": lambda j: repetitiveness.setup(j),
    }
    for name, build in builders.items():
        for concurrency in concurrencies:
            walls, result = [], None
            for _ in range(repeat):
                judge = scripted_llm(script, concurrency=concurrency, role="judge", temperature=0.0)
                metric = build(judge)
                start = time.perf_counter()
                result = metric.score(document, summary)
                walls.append(time.perf_counter() - start)
            assert result is not None
            calls = int(result.values["judge_calls"])
            bound = chain_bound(steps_of(name, result.values, concurrency), concurrency)
            wall = statistics.median(walls)
            print(
                f"{name:<16}{concurrency:>5}{calls:>7}{wall:>9.2f}{bound:>9.2f}{wall / bound:>7.2f}"
            )


def part_two(document: Document, summary: str, modules: dict[str, Any]) -> None:
    print("\nPart 2: embedded llama.cpp judge (Qwen2.5-Coder-0.5B, CPU), first sample story")
    print(f"{'metric':<16}{'calls':>7}{'prompt tok':>12}{'evaluated':>11}{'saved':>7}{'wall s':>9}")
    with tempfile.TemporaryDirectory() as cache:
        for name, module in modules.items():
            judge = Gateway(
                LOCAL, CallLog(None, keep=True), ResponseCache(cache), role="judge", temperature=0.0
            )
            start = time.perf_counter()
            module.setup(judge).score(document, summary)
            wall = time.perf_counter() - start
            entries = [e for e in judge.call_log.entries if not e["cached"]]
            prompt = sum(e["prompt_tokens"] for e in entries)
            evaluated = prompt - sum(e["cached_prompt_tokens"] for e in entries)
            saved = prompt / evaluated if evaluated else math.nan
            print(
                f"{name:<16}{len(entries):>7}{prompt:>12}{evaluated:>11}{saved:>6.1f}x{wall:>9.1f}"
            )


def check_local_setup(document: Document, summary: str) -> None:
    """Quick mode's part 2: what the embedded judge needs, without running it."""
    import llama_cpp

    from runner.llm.local.weights import default_gguf_path

    judge = Gateway(LOCAL, CallLog(None, keep=True), cache=None, role="judge", temperature=0.0)
    weights = default_gguf_path()  # assembled and verified on first use
    print(
        f"\nPart 2 (quick): set-up checked, model not run: {document.doc_id}, a summary of "
        f"{len(summary)} characters; judge {judge.spec.model}; weights {weights.name}; "
        f"llama_cpp {llama_cpp.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-local", action="store_true", help="only the scripted-judge part")
    parser.add_argument("--quick", action="store_true", help="one pass; part 2 not run")
    args = parser.parse_args()
    scripted = Document("bakery", article_judge.SOURCE)
    summary = " ".join(article_judge.SENTENCES[:4])
    if args.quick:
        part_one(scripted, summary, concurrencies=(8,), repeat=1)
    else:
        part_one(scripted, summary)
    if not args.skip_local:
        story = load_documents("sample")[0]
        modules = {
            "alignment": alignment,
            "coverage": coverage,
            "vagueness": vagueness,
            "repetitiveness": repetitiveness,
        }
        summary = " ".join(split_sentences(story.text)[:3])
        if args.quick:
            check_local_setup(story, summary)
        else:
            part_two(story, summary, modules)


if __name__ == "__main__":
    main()
