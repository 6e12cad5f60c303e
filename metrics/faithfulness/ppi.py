"""The faithfulness metric's PPI table (``report ppi=true``): people's scale, anchored.

For each rater configuration: people's summary labels paired with the rater's on the
summaries both decided, the rater's labels on the summaries people did not label, and
``runner.api.meta.anchored_mean`` (PPI++, ``ppi_py``) over them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from runner.api import DataError
from runner.api import meta as st
from runner.api.meta import Boot, Cell, MetaTable

RATER_COLUMNS = ("rater", "method", "judge")
"""The columns naming a rater configuration, first in every rater table."""


def ppi_table(
    people: Mapping[Any, tuple[bool, str]],
    configs: Mapping[tuple[str, str, str], Mapping[Any, tuple[float, Any]]],
    boot: Boot,
) -> tuple[MetaTable | None, list[str]]:
    """The % of faithful summaries on people's scale, anchored on their labels (PPI++).

    ``people``: summary -> (people's faithful label, difficulty); ``configs``: each rater
    configuration's summary -> (its faithful value, its run), as the metric's tables read
    them (``metrics.faithfulness.meta``).
    """
    rows: list[tuple[Cell, ...]] = []
    notes: list[str] = []
    for config, values in sorted(configs.items()):
        decided = {k: v for k, (v, _) in values.items() if not math.isnan(v)}
        paired = [(1.0 if people[k][0] else 0.0, v) for k, v in decided.items() if k in people]
        elsewhere = [v for k, v in decided.items() if k not in people]
        name = f"{config[0]} ({config[1]}, {config[2]})"
        try:
            found = st.anchored_mean(
                [p for p, _ in paired], [v for _, v in paired], elsewhere, boot.confidence
            )
        except DataError as err:
            notes.append(f"faithfulness: {name}: no PPI estimate: {err}")
            continue
        rows.append(
            (
                *config,
                found.ppi.n,
                found.judged,
                _percent(found.ppi),
                100.0 * found.judge_only,
                _percent(found.classical),
                st.labels_worth(found.worth),
            )
        )
    if not rows:
        return None, notes
    header = (
        *RATER_COLUMNS,
        "people's labels",
        "judged",
        "% faithful (PPI++)",
        "% faithful (judge only)",
        "% faithful (people only)",
        "labels the judge was worth",
    )
    caption = (
        "Faithfulness on people's scale: the % of faithful summaries estimated from people's "
        "labels and the rater's on every summary it judged, by prediction-powered inference "
        "(Angelopoulos et al. 2023, PPI++ power tuning, ppi_py), with its "
        f"{boot.confidence:.0%} CI; beside it the rater's own % (no correction) and people's "
        "labels alone with their classical CI. Labels the judge was worth: people's labels x "
        "(classical CI width / PPI CI width)^2, n/a where either interval has no width."
    )
    return MetaTable(
        "meta_ppi_faithfulness", "Faithfulness: PPI", header, tuple(rows), caption
    ), notes


def _percent(stat: st.Stat) -> st.Stat:
    return st.Stat(100 * stat.value, 100 * stat.low, 100 * stat.high, stat.n)
