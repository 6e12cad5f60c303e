"""What a value a plugin returns is, declared once by the plugin that computes it.

lm-evaluation-harness gives every value of a task its ``aggregation`` and
``higher_is_better``; inspect_ai's scorers declare their metrics. Here a metric (or a strategy,
for its series) declares ``VALUES = {"score": Value(title="BooookScore", range=(0, 100),
better="higher")}``, keyed by the value's name as it returns it. The job records the
declarations on its run (``runner.plugins.values``), and every reader takes them from there:
the report's column titles and plot axes, the console's table, the meta-evaluation's pair
direction, the viewer. No reader keeps a table of its own about a plugin's values, and a
value nobody declared keeps its key as its title, no range and no direction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Better = Literal["higher", "lower"]
Kind = Literal["number", "count", "ordinal", "label"]
KINDS: tuple[Kind, ...] = ("number", "count", "ordinal", "label")
"""``number``: any real (a mean, a rate); ``count``: a whole number of things (tokens,
claims); ``ordinal``: a rating on a scale whose steps are ordered but not evenly spaced (1-5);
``label``: a category coded as a number (1 faithful, 0 not)."""


@dataclass(frozen=True)
class Value:
    """One value's facts: what to call it, where it can lie, which way is better."""

    title: str = ""
    """Its column title and axis label ('BooookScore', '% novel trigrams'); '' = its key."""
    range: tuple[float, float] | None = None
    """The values it can take, (low, high): a plot's axis shows the whole range."""
    better: Better | None = None
    """Which way is better: 'higher', 'lower', or None when neither is (a length)."""
    kind: Kind = "number"
    """What sort of number it is (``KINDS``)."""
    series: bool = False
    """True when it is logged once per step (SummIt's score per iteration): plotted as a
    curve, and not a table column."""

    def as_json(self) -> dict[str, Any]:
        """The facts as a run records them (defaults left out)."""
        out: dict[str, Any] = {}
        if self.title:
            out["title"] = self.title
        if self.range is not None:
            out["range"] = list(self.range)
        if self.better is not None:
            out["better"] = self.better
        if self.kind != "number":
            out["kind"] = self.kind
        if self.series:
            out["series"] = True
        return out

    @classmethod
    def from_json(cls, data: Any) -> Value | None:
        """The facts a run recorded; None when they are not facts (a hand-edited tag)."""
        if not isinstance(data, dict):
            return None
        try:
            value = cls(
                title=str(data.get("title", "")),
                range=_pair(data["range"]) if data.get("range") is not None else None,
                better=data.get("better"),
                kind=data.get("kind", "number"),
                series=bool(data.get("series", False)),
            )
        except (TypeError, ValueError):
            return None
        return value if check_value("", value) is None else None


def _pair(data: Any) -> tuple[float, float]:
    low, high = data
    return float(low), float(high)


def check_value(name: str, value: Any) -> str | None:
    """What is wrong with one declared value; None when nothing is."""
    where = f"VALUES[{name!r}]" if name else "a value"
    if not isinstance(value, Value):
        return f"{where} must be a runner.api.Value, e.g. Value(title='Compression'); got {value!r}"
    if value.range is not None:
        low, high = value.range
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            return f"{where}: range must be (low, high) with low < high; got {value.range!r}"
    if value.better not in (None, "higher", "lower"):
        return f"{where}: better must be 'higher', 'lower' or None; got {value.better!r}"
    if value.kind not in KINDS:
        return f"{where}: kind must be one of {', '.join(KINDS)}; got {value.kind!r}"
    return None


def check_values(values: Any) -> str | None:
    """What is wrong with a plugin's ``VALUES``; None when it maps names to ``Value``s."""
    if not isinstance(values, Mapping) or not all(isinstance(k, str) and k for k in values):
        return f"VALUES must be a dict of value name -> runner.api.Value; got {values!r}"
    for name, value in values.items():
        problem = check_value(name, value)
        if problem:
            return problem
    return None


def title(key: str, facts: Mapping[str, Value]) -> str:
    """The title of the value named ``key`` (``booookscore/score``), else the key itself."""
    found = facts.get(key)
    return found.title if found is not None and found.title else key
