"""Calls with a length contract: regenerate (hier) or compress (incremental) until valid.

``runner.api.generation``: part of the plugin API (versioned with ``runner.api``).

Both loops are bounded by ``max_attempts`` and end in a fallback that always fits the
budget, so a model that ignores word limits (the paper's LLaMA-2, or a 0.5B local model)
costs a few extra calls instead of an endless loop. Every call is kept, for the trace and
the counters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from runner.api.budgets import count_words, fit_to_budget, is_valid, lowered
from runner.api.errors import ConfigError
from runner.api.text import count_tokens
from runner.api.types import LLM, Completion


@dataclass(frozen=True)
class Attempts:
    """The kept text of one bounded loop, with every call behind it."""

    text: str
    """The accepted answer, or the fallback cut to the budget."""
    calls: tuple[Completion, ...]
    """Every call made, in order."""
    prompt_tokens: int
    """Largest prompt sent, counted with ``llm.count_tokens`` on the exact text."""
    word_limits: tuple[int, ...]
    """Word limit written into each prompt."""
    fallback: bool
    """True when no attempt was acceptable and the fallback was kept."""

    @property
    def call_id(self) -> str:
        """Id of the call whose answer was kept (the last one)."""
        return self.calls[-1].call_id if self.calls else ""


def regenerate(
    llm: LLM,
    build: Callable[[int], str],
    *,
    budget: int,
    words: int,
    max_attempts: int,
    purpose: str,
) -> Attempts:
    """Call until the answer is valid; regenerate at temperature 1 with a lower word limit.

    ``build(word_limit)`` returns the prompt. After ``max_attempts`` regenerations the last
    answer is cut back to its budget and last sentence end (the paper's LLaMA-2 fallback).
    """
    calls: list[Completion] = []
    limits: list[int] = []
    largest = 0
    for attempt in range(max_attempts + 1):
        limit = words if attempt == 0 else lowered(words, attempt)
        prompt = build(limit)
        largest = max(largest, llm.count_tokens(prompt))
        temperature = None if attempt == 0 else 1.0  # None: the run's temperature
        completion = llm.complete(
            prompt, max_tokens=budget, temperature=temperature, sample=attempt, purpose=purpose
        )
        calls.append(completion)
        limits.append(limit)
        if is_valid(completion.text, budget):
            return Attempts(completion.text.strip(), tuple(calls), largest, tuple(limits), False)
    kept = fit_to_budget(calls[-1].text, budget)
    return Attempts(kept, tuple(calls), largest, tuple(limits), True)


def compress(
    llm: LLM,
    template: str,
    text: str,
    *,
    target_words: int,
    budget: int,
    window: int,
    max_attempts: int,
    tolerance: float | None,
    purpose: str,
) -> Attempts:
    """Condense ``text`` with the M.1 compression prompt at temperature 1 (footnote 15).

    ``template`` has the prompt's four positional ``{}`` slots: the text, its word count, and
    the target word count twice.

    Accepted when valid for ``budget`` and, if ``tolerance`` is given, within
    (1 ± tolerance) × ``target_words``. Otherwise, after ``max_attempts`` calls, the
    attempt closest to the target (valid ones first) is kept, cut to fit the budget.
    An input too long for the prompt to fit ``window`` is cut to fit first.
    """
    overhead = llm.count_tokens(template.format("", 0, target_words, target_words))
    room = window - budget - overhead
    if room <= 0:
        raise ConfigError(
            f"the compression prompt ({overhead} tokens) plus a {budget}-token budget exceed the "
            f"{window}-token window; lower strategy.max_summary_len"
        )
    source = fit_to_budget(text, room) if count_tokens(text) > room else text.strip()
    words = count_words(source)
    calls: list[Completion] = []
    for attempt in range(1, max(1, max_attempts) + 1):
        prompt = template.format(source, words, target_words, target_words)  # slots in order
        completion = llm.complete(
            prompt, max_tokens=budget, temperature=1.0, sample=attempt, purpose=purpose
        )
        calls.append(completion)
        if _acceptable(completion.text, budget, target_words, tolerance):
            limits = (target_words,) * len(calls)
            return Attempts(
                completion.text.strip(), tuple(calls), llm.count_tokens(prompt), limits, False
            )
    best = min(
        calls,
        key=lambda c: (not is_valid(c.text, budget), abs(count_words(c.text) - target_words)),
    )
    limits = (target_words,) * len(calls)
    return Attempts(
        fit_to_budget(best.text, budget), tuple(calls), llm.count_tokens(prompt), limits, True
    )


def _acceptable(text: str, budget: int, target: int, tolerance: float | None) -> bool:
    if not is_valid(text, budget):
        return False
    if tolerance is None:
        return True
    words = count_words(text)
    return (1 - tolerance) * target <= words <= (1 + tolerance) * target


def tally(calls: Iterable[Completion]) -> dict[str, float]:
    """Calls and tokens as reported by the provider."""
    items = list(calls)
    return {
        "calls": float(len(items)),
        "prompt_tokens": float(sum(c.prompt_tokens for c in items)),
        "completion_tokens": float(sum(c.completion_tokens for c in items)),
    }
