"""A cell's figures as a range: what its guesses' bounds make of calls, tokens, USD and time.

``Figures`` are one estimate's totals (its cost three ways: as configured, every call online,
every role that can batch in provider batches); a ``Span`` is the least and most of them over the
guesses' bounds (equal ends: the figure is exact); a ``Driver`` is one guess with the span it
alone makes (the others at their point values), so the printed estimate can say which guess
drives which part of the range.
"""

from __future__ import annotations

from dataclasses import dataclass

KEYS = ("calls", "prompt_tokens", "completion_tokens", "cost_usd", "wall_s")
"""An estimate's headline figures (``cost_usd``: what the job pays as configured)."""
FIELDS = (*KEYS, "online_usd", "batch_usd")
"""Every figure ``Figures`` holds, in its fields' order."""
COLUMNS = ("calls", "prompt_tokens", "completion_tokens", "online_usd", "batch_usd", "wall_s")
"""The figures the table prints, in its order: the cost online and in batches side by side
(what the job pays as configured is one of them unless its roles mix the two)."""
USD = ("cost_usd", "online_usd", "batch_usd")
"""The figures in dollars (printed and compared to the cent)."""


@dataclass(frozen=True)
class Figures:
    """One estimate's totals."""

    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    online_usd: float = 0.0
    """The cost with every call at its online price."""
    batch_usd: float = 0.0
    """The cost with every role that can batch at its batch price, the others online."""

    def __add__(self, other: Figures) -> Figures:
        """Figure by figure (a sweep's total of its cells)."""
        return Figures(*(getattr(self, k) + getattr(other, k) for k in FIELDS))

    def get(self, key: str) -> float:
        """The figure named ``key`` (one of ``FIELDS``)."""
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
        low = Figures(*(min(f.get(k) for f in every) for k in FIELDS))
        high = Figures(*(max(f.get(k) for f in every) for k in FIELDS))
        return cls(low, high)

    def __add__(self, other: Span) -> Span:
        """End by end (a sweep's total of its cells)."""
        return Span(self.low + other.low, self.high + other.high)

    def moves(self, key: str) -> bool:
        """Whether the figure ``key`` is a range (its ends differ by a printed unit)."""
        low, high = self.low.get(key), self.high.get(key)
        places = 2 if key in USD else 0
        return round(high, places) != round(low, places)


@dataclass(frozen=True)
class Driver:
    """One guessed (or measured-with-spread) quantity and the span it drives on its own."""

    key: str
    """'role: quantity', e.g. 'model: hier/level0 answers'."""
    text: str
    """Its point value and bounds, e.g. 'guess 60% of their budget (bounds: ...)'."""
    span: Span
