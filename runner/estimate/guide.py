"""What the estimate cannot know exactly, per role: answer lengths, retries, seconds per call.

Measured in this store when it has runs of the model (``runner/estimate/history.py``), else
a documented guess; every figure that is a guess says so in the estimate's notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runner.estimate.cached import Probe
from runner.estimate.history import History
from runner.estimate.latency import Latency
from runner.text import count_tokens
from runner.types import Message

DEFAULT_FILL = 0.6
"""Guess: a summary uses 60% of its token budget. A prompt's word limit is 65% of the budget
in words (~85% in tokens) and models tend to stay under it; one run of the model measures it."""
WORDS_PER_TOKEN = 0.75
"""English prose: about 0.75 words per cl100k token (used for incremental's word targets)."""
JUDGE_ANSWER_TOKENS = 30.0
"""Guess: a BooookScore verdict ('Questions: ... Types: ...') is about 30 tokens."""
SENTENCE_TOKENS = 25.0
"""Guess: a summary sentence is about 25 tokens (for summaries not made yet)."""


@dataclass(frozen=True)
class Guide:
    """One role's model: its history, its latency, and the guesses used."""

    history: History
    """What this store measured of the model."""
    latency: Latency
    """Seconds per call (measured or default)."""
    concurrency: int = 8
    """Calls in flight at once to this endpoint (``model.concurrency``)."""
    guesses: set[str] = field(default_factory=set)
    """The guesses this role's estimate relied on, for the notes (filled as they are used)."""
    probe: Probe | None = None
    """Asks the response cache about this role's predictable requests."""
    hits: list[int] = field(default_factory=lambda: [0])
    """Predictable requests found in the cache (one counter, for the notes)."""

    def cached(
        self, prompt: str | list[Message], max_tokens: int, stop: tuple[str, ...] = ()
    ) -> bool:
        """Whether the cache answers this request's first attempt (counted when it does)."""
        found = self.probe is not None and self.probe.hit(prompt, max_tokens, stop or None)
        self.hits[0] += found
        return found

    def fill(self, purpose: str, default: float = DEFAULT_FILL) -> float:
        """Share of ``max_tokens`` an answer of ``purpose`` uses."""
        if purpose in self.history.fill:
            return self.history.fill[purpose]
        self.guesses.add(f"{purpose} answers at {default:.0%} of their budget")
        return default

    def completion(self, purpose: str, default: float, what: str) -> float:
        """Mean completion tokens of a call of ``purpose``."""
        if purpose in self.history.completion:
            return self.history.completion[purpose]
        if what:
            self.guesses.add(what)
        return default

    def retries(self, purpose: str) -> float:
        """Further attempts per first attempt (0 until measured: the upper bound is noted)."""
        return self.history.retries.get(purpose, 0.0)

    def measured(self, purpose: str) -> bool:
        """Whether this store has calls of ``purpose`` by this model."""
        return purpose in self.history.completion


def template_tokens(path: Path | None, *values: object) -> int:
    """Tokens of the prompt file at ``path`` with its ``{}`` slots filled by ``values``.

    Slots beyond ``values`` are left empty; 0 without a file.
    """
    if path is None:
        return 0
    text = path.read_text(encoding="utf-8").rstrip("\n")
    slots = text.count("{}")
    filled = [*values, *([""] * max(0, slots - len(values)))][:slots]
    return count_tokens(text.format(*filled))
