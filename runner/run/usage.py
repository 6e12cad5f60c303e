"""Which of a run's values are MLflow metrics, and the usage table that holds the rest.

MLflow's compare page and chart view list every metric key alphabetically, so a run that
logs fifty bookkeeping counters (judge calls, re-asks, token counts, phase times, llama.cpp
clocks, strategy counters) buries its score among them. A run therefore logs as metrics
only what a researcher compares: each metric's headline values (every value of a metric
that names none), the values it names ``read_back`` (those the viewer's legend and the
report's error-type figure read, such as BooookScore's ``<label>/type/<slug>`` rates), each
under the label the run gave the metric, and a handful of totals. Every other
run-level value goes, with its name, into the table artifact ``usage.json`` (MLflow's table
format: the run's Artifacts tab shows it as a table), so nothing is lost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from runner.tracking.usage import USAGE_FILE as USAGE_FILE  # where the table is written

TOTALS = (
    "documents",
    "documents_failed",
    "calls",
    "cost_usd",
    "prompt_tokens",
    "completion_tokens",
    "wall_time_s",
)
"""The totals kept as metrics: how much was done, what it cost, how long it took."""


def kept_keys(metrics: Mapping[str, Any], values: Iterable[str]) -> set[str]:
    """The names of ``values`` that stay MLflow metrics: headlines, read-back values, totals.

    ``metrics`` are the job's metric plugins (label -> ``Metric``).
    """
    keep = set(TOTALS)
    for name, metric in metrics.items():
        headline = tuple(getattr(metric, "headline", ()))
        keep |= {f"{name}/{value}" for value in getattr(metric, "read_back", ())}
        if headline:
            keep |= {f"{name}/{value}" for value in headline}
        else:  # a metric that names no headline keeps all its values: we cannot tell which matter
            keep |= {v for v in values if v.startswith(f"{name}/")}
    return {v for v in values if v in keep}


def split(values: Mapping[str, float], kept: set[str]) -> tuple[dict[str, float], dict[str, float]]:
    """(metrics, usage): ``values`` divided by ``kept``, each in name order."""
    ordered = sorted(values)
    metrics = {k: values[k] for k in ordered if k in kept}
    return metrics, {k: values[k] for k in ordered if k not in kept}


def usage_table(usage: Mapping[str, float]) -> dict[str, list[Any]]:
    """One row per counter (name, value) in MLflow's table layout.

    NaN becomes null: JSON has no NaN.
    """
    names = sorted(usage)
    return {"name": names, "value": [_finite(usage[n]) for n in names]}


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(float(value)) else float(value)
