"""mypy holds every built-in plugin module against its Protocol, as a researcher's package can.

Not a test pytest runs: ``mypy`` (``[tool.mypy] modules``, CI's types step) checks these
assignments, so a built-in that drops ``ROLES`` or returns the wrong type from ``summarize``
fails the types step with the member named.
"""

from __future__ import annotations

from metrics import (
    alignment,
    booookscore,
    coherence,
    coverage,
    entity_density,
    f1,
    faithfulness,
    geval,
    repetitiveness,
    rouge,
    stats,
    vagueness,
)
from metrics.faithfulness import given
from runner.api import MetricModule, StrategyModule
from strategies import baseline, hier, incremental, none, summit

STRATEGIES: tuple[StrategyModule, ...] = (baseline, hier, incremental, none, summit)
METRICS: tuple[MetricModule, ...] = (
    alignment,
    booookscore,
    coherence,
    coverage,
    entity_density,
    f1,
    faithfulness,
    geval,
    given,
    repetitiveness,
    rouge,
    stats,
    vagueness,
)
