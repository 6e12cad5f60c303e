"""What the estimate cannot know exactly, per role: answer lengths, retries, seconds per call.

A ``Guide`` is what a plugin's ``estimate`` hook is given for each role (the protocol
``runner.api.estimating.Guide``).

Measured in this store when it has runs of the model (``runner/estimate/history.py``), else
a documented guess. Every such figure is taken through a ``Scenario`` with its point value
and the two ends of its plausible range (the cheap end and the dear end: a guess's bounds,
or the spread measured in this store), so the estimate can be made again at either end and
print a range that each guess is named as driving (``runner/estimate/ranges.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from runner.api.types import Message
from runner.estimate.cached import Probe
from runner.estimate.history import History
from runner.estimate.latency import Latency

DEFAULT_FILL = 0.6
"""Guess: a summary uses 60% of its token budget. A prompt's word limit is 65% of the budget
in words (~85% in tokens) and models tend to stay under it; one run of the model measures it."""
Side = Literal["cheap", "point", "dear"]
"""Which value of a guessed quantity an estimate takes: the end of its range that costs
least, its point value, or the end that costs most."""


@dataclass
class Scenario:
    """The side taken for each guessed quantity, and the quantities an estimate used.

    ``sides``: key -> side; the key ``"*"`` sets every quantity not named; point otherwise.
    """

    sides: Mapping[str, Side] = field(default_factory=dict)
    used: dict[str, str] = field(default_factory=dict)
    """Key -> what the figure rests on (its point and bounds), filled as figures are taken."""

    def pick(self, key: str, point: float, cheap: float, dear: float, text: str) -> float:
        """The quantity ``key`` on this scenario's side (recorded as used)."""
        self.used[key] = text
        side = self.sides.get(key, self.sides.get("*", "point"))
        return {"cheap": cheap, "point": point, "dear": dear}[side]


@dataclass(frozen=True)
class Guide:
    """One role's model: its history, its latency, and the guesses used."""

    history: History
    """What this store measured of the model."""
    latency: Latency
    """Seconds per call (measured or default)."""
    concurrency: int = 8
    """Calls in flight at once to this endpoint (``model.concurrency``)."""
    role: str = "model"
    """The role this guide is for (names its quantities: 'judge: booookscore answers')."""
    scenario: Scenario = field(default_factory=Scenario)
    """The side taken of each quantity that is not exact, shared by a cell's roles."""
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

    def pick(self, what: str, point: float, cheap: float, dear: float, text: str) -> float:
        """A quantity of this role on the scenario's side (``Scenario.pick``)."""
        return self.scenario.pick(f"{self.role}: {what}", point, cheap, dear, text)

    def fill(self, purpose: str, default: float = DEFAULT_FILL) -> float:
        """Share of ``max_tokens`` an answer of ``purpose`` uses.

        Measured: the mean, between the least and most measured. Guessed: ``default``,
        between an answer of almost nothing and one that uses the whole budget.
        """
        what = f"{purpose} answers"
        if purpose in self.history.fill:
            mean = self.history.fill[purpose]
            low, high = self.history.fill_range.get(purpose, (mean, mean))
            text = f"measured {mean:.0%} of their budget ({low:.0%}-{high:.0%})"
            return self.pick(what, mean, low, high, text)
        text = f"guess {default:.0%} of their budget (bounds: none of it to all of it)"
        return self.pick(what, default, 0.0, 1.0, text)

    def completion(
        self, purpose: str, default: float, what: str, cap: float | None = None
    ) -> float:
        """Mean completion tokens of a call of ``purpose``.

        Measured: the mean, between the least and most measured. Guessed (``what`` says
        the guess): ``default``, between one token and ``cap`` (the call's max_tokens);
        without ``what`` the default is not a guess of its own (it follows another figure).
        """
        if purpose in self.history.completion:
            mean = self.history.completion[purpose]
            low, high = self.history.completion_range.get(purpose, (mean, mean))
            text = f"measured {mean:.0f} tokens ({low:.0f}-{high:.0f})"
            return self.pick(f"{purpose} answers", mean, low, high, text)
        if not what:
            return default
        top = default if cap is None else float(cap)
        text = f"guess: {what} (bounds: 1-{top:.0f} tokens)"
        return self.pick(f"{purpose} answers", default, min(1.0, default), top, text)

    def retries(self, purpose: str) -> float:
        """Further attempts per first attempt (0 until measured: the upper bound is noted)."""
        return self.history.retries.get(purpose, 0.0)

    def calls(self, purpose: str) -> int:
        """Calls of ``purpose`` by this model in the store's runs."""
        return self.history.calls_of(purpose)

    def measured(self, purpose: str) -> bool:
        """Whether this store has calls of ``purpose`` by this model."""
        return purpose in self.history.completion
