"""What a strategy's or metric's optional ``estimate`` hook is given and returns.

``estimate=true`` predicts a job's calls before any call. The core knows no strategy or
metric: it chunks each document with the real tokenizer and asks the plugin's own hook for
the shape of its work, as ``Phase``s (groups of alike calls of one role). What the hook
cannot know exactly (how long an answer is, whether the response cache has a request) it
asks the role's ``Guide``, which answers from the store's measured runs or a named guess
with its bounds, so the estimate can print a range and say which guess drives it.

- strategy: ``estimate(chunks, <roles>, *, window, prompt, <params>) -> list[Phase]``, one
  document's calls; ``<roles>`` are ``Guide``s named as in ``ROLES``, ``window`` the model's
  context in tokens (0 when unknown), ``prompt`` a ``Prompt``, ``<params>`` the strategy's
  parameters as ``summarize`` gets them.
- metric: ``estimate(summary, expected, <roles>, *, prompt, <params>) -> list[Phase]``, the
  calls to score one summary: ``summary`` the text when the data gives it (else None),
  ``expected`` the strategy's expected summary length in tokens. A hook that takes an
  ``extras`` keyword gets what the data says about the summary (its given ``claims``), and
  one that takes ``document`` the source ``Document`` (None when the data gives none), for
  a metric whose prompts carry the source.

Imports nothing of ``runner`` but the plugin API.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from runner.api.text import count_tokens
from runner.api.types import Message

Prompt = Callable[[str], Path | None]
"""A prompt file by its path within the plugin's prompt folders (``PROMPT_DIRS``), e.g.
``'hier/paper/init.txt'``; None when the plugin has no such file."""


@dataclass(frozen=True)
class Phase:
    """Alike calls of one role within one document."""

    role: str
    purpose: str
    """The calls' purpose as the call log names it ('hier/level0'): their history's key."""
    calls: float
    prompt_tokens: float
    completion_tokens: float
    rounds: float
    """Calls on the critical path (the rest run beside them, up to the endpoint's limit)."""
    bound: str = ""
    """What an upper bound on these calls would be, when the count is an expectation."""


class Guide(Protocol):
    """One role's model as the estimate sees it: measured figures, or guesses with bounds."""

    @property
    def concurrency(self) -> int:
        """Calls in flight at once to this endpoint (``model.concurrency``)."""
        ...

    def fill(self, purpose: str) -> float:
        """Share of its ``max_tokens`` an answer of ``purpose`` uses (measured or guessed)."""
        ...

    def completion(
        self, purpose: str, default: float, what: str, cap: float | None = None
    ) -> float:
        """Mean completion tokens of a call of ``purpose``.

        ``what`` words the guess (empty: ``default`` follows another figure and is no guess
        of its own); ``cap`` is the call's ``max_tokens``.
        """
        ...

    def retries(self, purpose: str) -> float:
        """Further attempts per first attempt of ``purpose`` (0 until measured)."""
        ...

    def measured(self, purpose: str) -> bool:
        """Whether the store has calls of ``purpose`` by this model."""
        ...

    def calls(self, purpose: str) -> int:
        """Calls of ``purpose`` by this model in the store's runs."""
        ...

    def pick(self, what: str, point: float, cheap: float, dear: float, text: str) -> float:
        """A guessed quantity: ``point``, or its ``cheap`` or ``dear`` bound.

        The estimate is made again at each end; ``text`` says what the quantity rests on
        (printed with the range).
        """
        ...

    def cached(
        self, prompt: str | list[Message], max_tokens: int, stop: tuple[str, ...] = ()
    ) -> bool:
        """Whether the response cache answers this request's first attempt (it costs nothing)."""
        ...


def prompt_text(path: Path | None) -> str:
    """A prompt file's text as a plugin fills it (its trailing newline removed); '' for None."""
    return path.read_text(encoding="utf-8").rstrip("\n") if path else ""


@functools.lru_cache(maxsize=4096)
def template_tokens(path: Path | None, *values: object) -> int:
    """Tokens of the prompt file at ``path`` with its ``{}`` slots filled by ``values``.

    Slots beyond ``values`` are left empty; 0 without a file. Cached: an estimate's ranges
    make each cell again at its guesses' bounds, with the same prompts.
    """
    if path is None:
        return 0
    text = prompt_text(path)
    slots = text.count("{}")
    filled = [*values, *([""] * max(0, slots - len(values)))][:slots]
    return count_tokens(text.format(*filled))
