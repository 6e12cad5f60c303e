"""Helpers for strategy tests: a scripted responder for the loopback server, the real
gateway pointed at it, the shared book, and trace checks both strategies' tests reuse."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.api.text import count_tokens, ends_with_sentence_end
from runner.api.types import Chunk, Message, StrategyResult
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway, ModelSpec
from runner.llm.retry import RetryPolicy
from tests.conftest import missing_shared
from tests.helpers.scripted_llm import scripted_llm

BOOK = (
    Path(__file__).resolve().parents[2]
    / ".."
    / "shared"
    / "data"
    / "reminiscences-of-pioneer-days-in-st-paul.txt"
)
SENTENCES = (
    "The settlers raised a mill by the river in the spring.",
    "A steamboat brought news, flour and three new families.",
    "The old trader told stories of the fur posts upriver.",
    "Winter closed the roads, and the town kept to its stoves.",
)


def book_text() -> str:
    """The 57k-token book from ../shared/data, or skip on a fresh clone."""
    if not BOOK.exists():
        missing_shared("book")
    return BOOK.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=512)
def text_of(tokens: int, terminated: bool = True) -> str:
    """Plausible prose of at most ``tokens`` tokens (at least one sentence)."""
    out: list[str] = []
    while True:
        candidate = " ".join(out + [SENTENCES[len(out) % len(SENTENCES)]])
        if out and count_tokens(candidate) > tokens:
            break
        out.append(SENTENCES[len(out) % len(SENTENCES)])
    text = " ".join(out)
    return text if terminated else text.rstrip(".") + " and then the"


def words_of(n: int) -> str:
    """Exactly ``n`` words ending at a sentence end."""
    return " ".join(["word"] * max(0, n - 1) + ["end."])


def kind_of(prompt: str) -> str:
    """Which of the paper's prompts this is."""
    markers = {
        "Below is a part of a story:": "level0",
        "Below are several summaries": "merge",
        "Currently, this summary contains": "compress",
        "Your task is to edit the book summary": "postprocess",
        "Below is the beginning part of a story:": "init",
        "Below is a segment from a story:": "update",
    }
    for marker, kind in markers.items():
        if marker in prompt:
            return kind
    return "other"


def compress_target(prompt: str) -> int:
    """The word target written into a compression prompt."""
    match = re.search(r"condense it to less than (\d+) words", prompt)
    assert match, "not a compression prompt"
    return int(match.group(1))


def echo_summary(prompt: str) -> str:
    """The summary inside an M.3 prompt, returned unchanged."""
    return prompt.split("---\n", 1)[1].rsplit("\n---", 1)[0]


Behaviour = Callable[[str, str, dict[str, Any]], str]


def well_behaved(kind: str, prompt: str, request: dict[str, Any]) -> str:
    """Answers at 60% of max_tokens, terminated; compressions hit the word target."""
    if kind == "postprocess":
        return echo_summary(prompt)
    if kind == "compress":
        return words_of(compress_target(prompt))
    return text_of(int(request["max_tokens"] * 0.6))


def responder(behaviour: Behaviour = well_behaved) -> Callable[[dict[str, Any]], str]:
    """A FakeOpenAIServer responder dispatching on the prompt kind."""

    def answer(request: dict[str, Any]) -> str:
        prompt = str(request["messages"][-1]["content"])
        return behaviour(kind_of(prompt), prompt, request)

    return answer


def gateway(url: str, context_window: int = 8192, concurrency: int = 16) -> Gateway:
    """The real gateway (litellm's openai provider) against the loopback server, no cache."""
    spec = ModelSpec(
        name="fake",
        model="openai/fake",
        api_base=url,
        context_window=context_window,
        temperature=0.5,
        concurrency=concurrency,
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01),
    )
    return Gateway(spec, CallLog(None), cache=None)


def steps(result: StrategyResult, kind: str) -> list[dict[str, Any]]:
    """Trace steps of one kind, as the runner writes them (kind and call_id inlined)."""
    return [
        {"kind": s.kind, "call_id": s.call_id, **s.detail} for s in result.trace if s.kind == kind
    ]


def check_hier_tree(result: StrategyResult, n_chunks: int, window: int) -> None:
    """The merge tree covers the input, fits the window, packs greedily, matches the counters."""
    level0 = steps(result, "summarize")
    assert [s["chunk"] for s in level0] == list(range(n_chunks)), "a chunk never reached level 0"
    merges = steps(result, "merge")
    width, level = n_chunks, 0
    for level in range(1, max([m["level"] for m in merges], default=0) + 1):
        here = [m for m in merges if m["level"] == level]
        children = [c for m in here for c in m["children"]]
        assert children == list(range(width)), f"level {level} skips or repeats a summary"
        for m in here:
            assert m["prompt_tokens"] + m["budget"] <= window, "merge prompt exceeds W - G_l"
            if m["next_prompt_tokens"] is not None:  # greedy: one more would not have fit
                assert m["next_prompt_tokens"] + m["budget"] > m["window"]
            assert m["output_tokens"] <= m["budget"] and ends_with_sentence_end(m["text"])
        width = len(here)
    assert width == 1, "more than one summary left at the top"
    assert result.counters["levels"] == level
    assert result.counters["merges"] == len(merges)
    for s in level0:
        assert s["prompt_tokens"] + s["budget"] <= window
        assert s["output_tokens"] <= s["budget"]


def check_incremental(result: StrategyResult, n_chunks: int, budget: int) -> list[str]:
    """Every chunk updated the summary; each running summary is within budget once compressed."""
    updates = steps(result, "update")
    assert [u["index"] for u in updates] == list(range(n_chunks))
    compressed = {c["index"]: c for c in steps(result, "compress")}
    running = []
    for u in updates:
        kept = compressed.get(u["index"], u)
        assert u["valid"] or u["index"] in compressed, "an invalid summary was not compressed"
        assert count_tokens(kept["text"]) <= budget
        assert ends_with_sentence_end(kept["text"]) or kept.get("fallback")
        running.append(kept["text"])
    return running


def scripted(behaviour: Any = well_behaved, **kw: Any) -> Gateway:
    """The real gateway in front of a scripted model that answers as ``behaviour`` does."""

    def script(messages: list[Message], options: dict[str, Any]) -> str:
        prompt = messages[-1].content
        return str(behaviour(kind_of(prompt), prompt, options))

    return scripted_llm(script, **kw)


def chunks_of(sizes: list[int]) -> list[Chunk]:
    """Chunks of ``sizes`` tokens of numbered sentences, each ending a paragraph."""
    texts = [text_of(n) + "\n\n" for n in sizes]
    return [Chunk(i, t, count_tokens(t)) for i, t in enumerate(texts)]
