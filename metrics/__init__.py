"""Metrics, picked by name: each a plain function
``score(document, summary, judge, **params) -> MetricResult`` whose keyword parameters are
named like its YAML keys. A metric knows nothing of Hydra, MLflow or litellm; one that
cannot decide returns NaN with a note. ``NEEDS_JUDGE`` lists the metrics that call a model.
"""

from __future__ import annotations

from typing import Callable

from metrics import booookscore, stats

METRICS: dict[str, Callable[..., object]] = {
    "booookscore": booookscore.score,
    "stats": stats.score,
}

NEEDS_JUDGE: frozenset[str] = frozenset({"booookscore"})
