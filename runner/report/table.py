"""Table 2 as numbers: a mean and a percentile-bootstrap CI per (row, column, metric) cell.

A cell's observations are the per-document values of its runs (``scores.json``), pooled
across runs that share the cell: repeats of one configuration add documents, they are not
averaged as runs first (a run of 3 documents would otherwise weigh as much as one of 100).
A metric a run logged only as a run-level value (``cost_usd``, ``calls``) contributes that
one value instead, and the table says which metrics were read that way.

The interval is the BooookScore paper's (Appendix G): resample the observations with
replacement ``resamples`` times, take the mean of each resample, and read the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles (numpy's linear
interpolation). The observations are sorted first and every cell draws from a fresh
``numpy.random.default_rng(seed)``, so a cell's interval depends only on its values and the
seed: not on the order the store returned runs in, nor on which other cells are in the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from runner.api.value import Value, title
from runner.plugins import values as value_facts
from runner.report.layout import MISSING, Layout, param
from runner.tracking.reader import RunRecord

Scores = Mapping[str, Mapping[str, Mapping[str, float]]]
"""run id -> document id -> value name -> value: each run's ``scores.json``."""
Key = tuple[str, ...]
"""A row's or a column's values of its keys."""


@dataclass(frozen=True)
class Estimate:
    """One cell: the mean over its observations and its bootstrap interval."""

    mean: float
    """Mean over the observations (documents, pooled over the cell's runs)."""
    low: float
    """Lower bound of the percentile-bootstrap interval."""
    high: float
    """Upper bound."""
    n: int
    """Number of observations averaged."""
    runs: int
    """Number of runs they came from."""


@dataclass(frozen=True)
class Table:
    """Cells addressed by (row values, column values, metric)."""

    layout: Layout
    """Row and column keys."""
    metrics: tuple[str, ...]
    """Metric names, in column order."""
    rows: tuple[Key, ...]
    """Row values, sorted (numbers numerically)."""
    columns: tuple[Key, ...]
    """Column values, sorted."""
    cells: dict[tuple[Key, Key, str], Estimate] = field(hash=False)
    """Only cells with at least one observation."""
    per_run: frozenset[str]
    """Metrics read as one value per run because no run had them per document."""
    confidence: float
    """Interval coverage, e.g. 0.95."""
    resamples: int
    """Bootstrap resamples per cell."""
    seed: int
    """Seed of every cell's generator."""
    facts: Mapping[str, Value] = field(default_factory=dict, hash=False)
    """What the runs' plugins declared about their values (``runner.plugins.values``)."""

    def title(self, metric: str) -> str:
        """The metric's column title: its declared title, else its name."""
        return title(metric, self.facts)

    def cell(self, row: Key, column: Key, metric: str) -> Estimate | None:
        """The cell's estimate; None when it has no observation."""
        return self.cells.get((row, column, metric))


def bootstrap_ci(
    values: Sequence[float], *, resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` (see the module docstring)."""
    data = np.sort(np.asarray(values, dtype=float))
    if data.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if data.size == 1:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [100.0 * tail, 100.0 * (1.0 - tail)])
    return float(low), float(high)


def observations(
    run: RunRecord, docs: Mapping[str, Mapping[str, float]], metric: str
) -> list[float]:
    """The run's finite per-document values of ``metric``, else its run-level value, else []."""
    per_doc = [float(v[metric]) for v in docs.values() if metric in v]
    if per_doc:
        return [v for v in per_doc if not math.isnan(v)]
    value = run.metrics.get(metric)
    return [] if value is None or math.isnan(value) else [value]


def natural(key: Key) -> tuple[tuple[int, float, str], ...]:
    """Sort key: numbers by value, then text, then missing values."""
    out = []
    for text in key:
        try:
            out.append((0, float(text), text))
        except ValueError:
            out.append((2 if text == MISSING else 1, 0.0, text))
    return tuple(out)


def build_table(
    runs: Sequence[RunRecord],
    scores: Scores,
    layout: Layout,
    metrics: Sequence[str],
    *,
    resamples: int,
    confidence: float,
    seed: int,
) -> Table:
    """Group ``runs`` into cells by the layout's keys and estimate every metric of each."""
    groups: dict[tuple[Key, Key], list[RunRecord]] = {}
    for run in runs:
        row = tuple(param(run, k) for k in layout.rows)
        column = tuple(param(run, k) for k in layout.columns)
        groups.setdefault((row, column), []).append(run)
    cells: dict[tuple[Key, Key, str], Estimate] = {}
    for (row, column), members in groups.items():
        for metric in metrics:
            per_run = [observations(r, scores.get(r.run_id, {}), metric) for r in members]
            values = [v for found in per_run for v in found]
            if values:
                low, high = bootstrap_ci(
                    values, resamples=resamples, confidence=confidence, seed=seed
                )
                mean = float(np.mean(values))
                cells[(row, column, metric)] = Estimate(
                    mean, low, high, len(values), sum(1 for found in per_run if found)
                )
    documented = {m for m in metrics for docs in scores.values() for v in docs.values() if m in v}
    return Table(
        layout=layout,
        metrics=tuple(metrics),
        rows=tuple(sorted({r for r, _ in groups}, key=natural)),
        columns=tuple(sorted({c for _, c in groups}, key=natural)),
        cells=cells,
        per_run=frozenset(set(metrics) - documented),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        facts=value_facts.merged((r.tags, r.params, r.metrics) for r in runs),
    )
