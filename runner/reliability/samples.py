"""A judged item's repeated samples (``judge.samples=K``) pooled into its value.

The job scores each (document, summary) K times, each time with the judge's own sample slot
(``runner.llm.gateway.Gateway.sampled``): K distinct requests, each answer cached on its own.
The item's value is reduced by the value's declared kind (``runner.api.Value.kind``): the
majority for a ``label``, the mean for a ``number``, ``count`` or ``ordinal``. A majority
tied between two labels is not broken: the value is NaN (undecided) and a note says which
labels tied, so a report counts the document as undecided rather than as a coin toss.
Samples that decided nothing (NaN) are left out of the pool; an item with none is NaN.

Artifacts and verdicts are the first sample's (what the judge said, for the trace); every
sample's values are kept beside them (``samples.json``), and their agreement is
``runner.reliability.agreement``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from runner.api.types import MetricResult
from runner.api.value import Value


def pool(label: str, results: Sequence[MetricResult], facts: Mapping[str, Value]) -> MetricResult:
    """One result from the K samples of one item: values pooled by kind, the first's rest."""
    first = results[0]
    values: dict[str, float] = {}
    notes = list(first.notes)
    for name in first.values:
        drawn = [float(r.values.get(name, math.nan)) for r in results]
        kind = facts[name].kind if name in facts else "number"
        values[name], note = pooled(drawn, kind)
        if note:
            notes.append(f"{label}/{name}: {note}")
    return MetricResult(values, dict(first.artifacts), tuple(notes))


def pooled(drawn: Sequence[float], kind: str) -> tuple[float, str]:
    """(the value, a note or '') of one value's samples, by its kind."""
    decided = [v for v in drawn if not math.isnan(v)]
    if not decided:
        return math.nan, ""
    if kind != "label":
        return sum(decided) / len(decided), ""
    counts = Counter(decided).most_common()
    top = [v for v, n in counts if n == counts[0][1]]
    if len(top) > 1:
        tied = " and ".join(_shown(v) for v in sorted(top))
        return math.nan, f"the {len(drawn)} samples tie between {tied}; undecided"
    return top[0], ""


def _shown(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)
