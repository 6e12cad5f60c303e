"""How the params of a report's runs lay out as the rows and columns of its table.

Rows and columns are the params that vary across the averaged runs. The column key is
``strategy`` when it varies (the paper's Table 2); the row keys are the smallest set of the
other varying params that still tells every configuration apart, so ``model.model`` (which
follows ``model``) or ``strategy.levels`` (which follows ``strategy``) do not widen the table.
Which runs are averaged is ``runner.report.runs``. Plain Python over ``RunRecord``s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.api.errors import ConfigError
from runner.config.overrides import is_setting

if TYPE_CHECKING:
    from runner.tracking.reader import RunRecord

PREFERRED_KEYS = ("strategy", "model", "judge", "evaluator", "chunk", "data", "temperature", "seed")
"""Row keys tried first, so a label reads ``model=gpt4`` rather than ``model.model=openai/...``."""
MISSING = "—"
"""Shown for a param a run does not have (e.g. ``strategy.levels`` of a non-hier run)."""


@dataclass(frozen=True)
class Layout:
    """Which params name the rows and the columns of the table."""

    rows: tuple[str, ...]
    """Row keys, in label order."""
    columns: tuple[str, ...]
    """Column keys (usually just ``strategy``; empty for a single column group)."""
    implied: tuple[str, ...]
    """Varying params left out because the row and column keys determine them."""
    pooled: tuple[str, ...]
    """Varying params left out that the keys do not determine: cells pool over them."""


def param(run: RunRecord, key: str) -> str:
    """The run's value of ``key`` (``MISSING`` when it has none)."""
    return run.params.get(key, MISSING)


def varying_keys(runs: Sequence[RunRecord]) -> list[str]:
    """Params with more than one value across ``runs`` (absent counts as a value)."""
    keys = sorted({k for r in runs for k in r.params})
    return [k for k in keys if len({param(r, k) for r in runs}) > 1]


def _priority(key: str) -> tuple[int, int, str]:
    preferred = PREFERRED_KEYS.index(key) if key in PREFERRED_KEYS else len(PREFERRED_KEYS)
    return (key.count("."), preferred, key)


def _determined(runs: Sequence[RunRecord], by: Sequence[str], key: str) -> bool:
    """True when runs that agree on every ``by`` key also agree on ``key``."""
    seen: dict[tuple[str, ...], str] = {}
    for run in runs:
        value = seen.setdefault(tuple(param(run, k) for k in by), param(run, key))
        if value != param(run, key):
            return False
    return True


def layout(
    runs: Sequence[RunRecord], rows: Sequence[str] | None, columns: Sequence[str] | None
) -> Layout:
    """Row and column keys: the given ones (checked), or chosen as the module docstring says."""
    known = {k for r in runs for k in r.params}
    for what, keys in (("rows", rows), ("columns", columns)):
        unknown = [k for k in keys or () if k not in known]
        if unknown:
            raise ConfigError(
                f"{what}: '{unknown[0]}' is not a param of the selected runs; "
                f"params that vary: {', '.join(varying_keys(runs)) or 'none'}"
            )
    both = set(rows or ()) & set(columns or ())
    if both:
        raise ConfigError(f"'{sorted(both)[0]}' is in both rows and columns; keep it in one")
    varying = [k for k in varying_keys(runs) if not is_setting(k)]
    if columns is None:
        columns = ["strategy"] if "strategy" in varying and "strategy" not in (rows or ()) else []
    if rows is None:
        rows = []
        for key in sorted(
            (k for k in varying if k not in columns and k != "repeat"), key=_priority
        ):
            if not _determined(runs, [*columns, *rows], key):
                rows.append(key)
    keys = [*columns, *rows]
    rest = [k for k in varying if k not in keys]
    implied = [k for k in rest if _determined(runs, keys, k)]
    pooled = [k for k in rest if k not in implied]
    return Layout(tuple(rows), tuple(columns), tuple(implied), tuple(pooled))
