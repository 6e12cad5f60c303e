"""One level of hierarchical merging: greedy packing, prior context, the oversize guard.

The summaries of the level below arrive through ``Inputs``, which waits for each one only
when the packing reaches it: level 1 can start merging while the tail of level 0 is still
being summarized, so the merge chain overlaps the slowest level-0 calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from runner.api import LLM, Completion, ConfigError, TraceStep, cut_to_sentence_end, decode, encode
from runner.api.budgets import fit_to_budget, word_limit
from runner.api.generation import Attempts, compress, regenerate
from strategies.prompting import fill

LABEL_TOKENS = 8
"""Planning allowance for each summary's "Summary 12:" label and separator."""


@dataclass(frozen=True)
class Setup:
    """Resolved settings every level shares."""

    llm: LLM
    templates: dict[str, str]
    window: int
    """Usable window (context window minus the safety margin)."""
    final_budget: int
    words_per_token: float
    context_share: float
    max_attempts: int
    max_merges: int


class Inputs:
    """The level below: finished texts, or level-0 futures resolved on first use."""

    def __init__(self, items: list[str] | list[Future[Attempts]]) -> None:
        """Hold level 0's futures unresolved, so merging can start before all are done."""
        self._items = list(items)
        self._texts: dict[int, str] = {}

    def __len__(self) -> int:
        """How many summaries the level below has (finished or not)."""
        return len(self._items)

    def text(self, index: int) -> str:
        """Summary ``index``, waiting for it if level 0 is still working on it."""
        if index not in self._texts:
            item = self._items[index]
            self._texts[index] = item.result().text if isinstance(item, Future) else str(item)
        return self._texts[index]

    def span(self, start: int, stop: int) -> list[str]:
        """Summaries ``start``..``stop - 1``."""
        return [self.text(i) for i in range(start, min(stop, len(self)))]

    def replace(self, index: int, text: str) -> None:
        """Use ``text`` instead of summary ``index`` (after the oversize guard shrank it)."""
        self._texts[index] = text


def prompt(setup: Setup, context: str, children: list[str], words: int) -> str:
    """The merge prompt; summaries labelled "Summary j:" as in the authors' code."""
    body = "\n\n".join(f"Summary {j}:\n\n{text}" for j, text in enumerate(children, start=1))
    if context:
        return fill(setup.templates["merge_context"], context, body, words)
    return fill(setup.templates["merge"], body, words)


def overhead(setup: Setup, name: str, budget: int) -> int:
    """Tokens of template ``name`` with empty text slots and the budget's word limit."""
    words = word_limit(budget, setup.words_per_token)
    blanks = ("",) * (setup.templates[name].count("{}") - 1)
    return setup.llm.count_tokens(fill(setup.templates[name], *blanks, words))


def fits_one_merge(setup: Setup, inputs: Inputs, budget: int) -> bool:
    """Whether every summary fits a single merge at ``budget``.

    Stops reading at the first overflow.
    """
    words = word_limit(budget, setup.words_per_token)
    limit = setup.window - budget
    estimate = overhead(setup, "merge", budget)
    for index in range(len(inputs)):
        estimate += _piece(setup, index, inputs.text(index))
        if estimate > limit and _tokens(setup, "", inputs.span(0, index + 1), words) > limit:
            return False
    return _tokens(setup, "", inputs.span(0, len(inputs)), words) <= limit


def merge_level(
    setup: Setup, inputs: Inputs, level: int, budget: int
) -> tuple[list[str], list[TraceStep], list[Completion]]:
    """Merge consecutive summaries in order, each merge seeing the previous one as context."""
    words = word_limit(budget, setup.words_per_token)
    merged: list[str] = []
    steps: list[TraceStep] = []
    calls: list[Completion] = []
    start = 0
    while start < len(inputs):
        if len(merged) >= setup.max_merges:
            raise ConfigError(
                f"hier exceeded max_merges_per_level={setup.max_merges} at level {level}; "
                f"raise strategy.max_merges_per_level or chunk"
            )
        if _tokens(setup, "", inputs.span(start, start + 1), words) + budget > setup.window:
            before = inputs.text(start)
            shrunk = shrink(setup, before, budget, words)
            steps.append(
                step(
                    "compress",
                    shrunk,
                    level=level,
                    child=start,
                    budget=budget,
                    before_tokens=setup.llm.count_tokens(before),
                )
            )
            inputs.replace(start, shrunk.text)
            calls += shrunk.calls
        context = _context(setup, merged[-1] if merged else "", budget)
        if (
            context
            and _tokens(setup, context, inputs.span(start, start + 1), words) + budget
            > setup.window
        ):
            context = ""
        count = pack(setup, context, inputs, start, words, budget)
        children = inputs.span(start, start + count)
        more = inputs.span(start, start + count + 1) if start + count < len(inputs) else None
        result = regenerate(
            setup.llm,
            _builder(setup, context, children),
            budget=budget,
            words=words,
            max_attempts=setup.max_attempts,
            purpose="hier/merge",
        )
        steps.append(
            step(
                "merge",
                result,
                level=level,
                index=len(merged),
                children=list(range(start, start + count)),
                context_tokens=setup.llm.count_tokens(context),
                budget=budget,
                window=setup.window,
                next_prompt_tokens=_tokens(setup, context, more, words) if more else None,
            )
        )
        calls += result.calls
        merged.append(result.text)
        start += count
    return merged, steps, calls


def _builder(setup: Setup, context: str, children: list[str]) -> Callable[[int], str]:
    """The merge prompt as a function of the word limit (regeneration lowers it)."""
    return lambda words: prompt(setup, context, children, words)


def pack(setup: Setup, context: str, inputs: Inputs, start: int, words: int, budget: int) -> int:
    """How many summaries from ``start`` fit one merge (at least one).

    Extends by per-summary token estimates (reading each summary once, and no further than
    needed), then settles the boundary with exact counts of the real prompt.
    """
    limit = setup.window - budget
    count = 1
    estimate = _tokens(setup, context, inputs.span(start, start + 1), words)
    while start + count < len(inputs):
        estimate += _piece(setup, count, inputs.text(start + count))
        if estimate > limit:
            break
        count += 1
    while count > 1 and _tokens(setup, context, inputs.span(start, start + count), words) > limit:
        count -= 1
    while (
        start + count < len(inputs)
        and _tokens(setup, context, inputs.span(start, start + count + 1), words) <= limit
    ):
        count += 1
    return count


def _piece(setup: Setup, position: int, text: str) -> int:
    return setup.llm.count_tokens(f"\n\nSummary {position + 1}:\n\n{text}")


def _tokens(setup: Setup, context: str, children: list[str], words: int) -> int:
    return setup.llm.count_tokens(prompt(setup, context, children, words))


def _context(setup: Setup, previous: str, budget: int) -> str:
    """The previous merge, capped at ``context_share`` of the input room, cut to a sentence end."""
    if not previous:
        return ""
    room = setup.window - budget - overhead(setup, "merge_context", budget)
    cap = max(0, math.floor(setup.context_share * room))
    tokens = encode(previous)
    if len(tokens) <= cap:
        return previous
    return cut_to_sentence_end(decode(tokens[:cap]))


def shrink(setup: Setup, text: str, budget: int, words: int) -> Attempts:
    """Compress a summary too long to fit any merge on its own (a guard the paper lacks).

    The compression's own prompt must fit too: its answer gets the room the merge leaves,
    but at most half of what the prompt leaves when the input is long (input beyond that
    is cut, the lesser evil next to a prompt the model rejects).
    """
    room = setup.window - budget - _tokens(setup, "", [""], words) - LABEL_TOKENS
    avail = setup.window - overhead(setup, "compress", room)
    if room <= 0 or avail <= 1:
        raise ConfigError(
            f"a merge with a {budget}-token budget leaves no room for input in the "
            f"{setup.window}-token window; lower strategy.max_summary_len"
        )
    target = min(room, max(avail - setup.llm.count_tokens(text), avail // 2))
    result = compress(
        setup.llm,
        setup.templates["compress"],
        text,
        target_words=word_limit(target, setup.words_per_token),
        budget=target,
        window=setup.window,
        max_attempts=setup.max_attempts,
        tolerance=None,
        purpose="hier/compress",
    )
    return Attempts(
        fit_to_budget(result.text, target),
        result.calls,
        result.prompt_tokens,
        result.word_limits,
        result.fallback,
    )


def step(kind: str, result: Attempts, **detail: Any) -> TraceStep:
    """A trace step with the facts every call-backed step shares."""
    detail.update(
        prompt_tokens=result.prompt_tokens,
        output_tokens=len(encode(result.text)),
        attempts=len(result.calls),
        word_limits=list(result.word_limits),
        fallback=result.fallback,
        call_ids=[c.call_id for c in result.calls],
        text=result.text,
    )
    return TraceStep(kind, result.call_id, detail)
