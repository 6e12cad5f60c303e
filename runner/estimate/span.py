"""A cell's figures as a range: what its guesses' bounds make of calls, tokens, USD and time.

``Figures`` are one estimate's five totals; a ``Span`` is the least and most of them over the
guesses' bounds (equal ends: the figure is exact); a ``Driver`` is one guess with the span it
alone makes (the others at their point values), so the printed estimate can say which guess
drives which part of the range.
"""

from __future__ import annotations

from dataclasses import dataclass

KEYS = ("calls", "prompt_tokens", "completion_tokens", "cost_usd", "wall_s")
"""The figures of an estimate, in the table's order."""


@dataclass(frozen=True)
class Figures:
    """One estimate's totals."""

    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    cost_usd: float = 0.0
    wall_s: float = 0.0

    def __add__(self, other: Figures) -> Figures:
        """Figure by figure (a sweep's total of its cells)."""
        return Figures(*(getattr(self, k) + getattr(other, k) for k in KEYS))

    def get(self, key: str) -> float:
        """The figure named ``key`` (one of ``KEYS``)."""
        return float(getattr(self, key))


@dataclass(frozen=True)
class Span:
    """The least and most of each figure."""

    low: Figures
    high: Figures

    @classmethod
    def exact(cls, figures: Figures) -> Span:
        """A span of one value: nothing in it rests on a guess."""
        return cls(figures, figures)

    @classmethod
    def around(cls, *every: Figures) -> Span:
        """The least and most of each figure over ``every`` estimate."""
        low = Figures(*(min(f.get(k) for f in every) for k in KEYS))
        high = Figures(*(max(f.get(k) for f in every) for k in KEYS))
        return cls(low, high)

    def __add__(self, other: Span) -> Span:
        """End by end (a sweep's total of its cells)."""
        return Span(self.low + other.low, self.high + other.high)

    def moves(self, key: str) -> bool:
        """Whether the figure ``key`` is a range (its ends differ by a printed unit)."""
        low, high = self.low.get(key), self.high.get(key)
        return round(high, 2 if key == "cost_usd" else 0) != round(
            low, 2 if key == "cost_usd" else 0
        )


@dataclass(frozen=True)
class Driver:
    """One guessed (or measured-with-spread) quantity and the span it drives on its own."""

    key: str
    """'role: quantity', e.g. 'model: hier/level0 answers'."""
    text: str
    """Its point value and bounds, e.g. 'guess 60% of their budget (bounds: ...)'."""
    span: Span
