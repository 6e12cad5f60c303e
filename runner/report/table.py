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
Samples = Mapping[str, Mapping[str, Mapping[str, Sequence[tuple[str, float]]]]]
"""run id -> document id -> value name -> (judge, value) of each sample (``samples.json``;
the judge '' for the one judge, a panel member's alias otherwise)."""
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
    samples: int = 0
    """The judge's samples per document (``judge.samples``); 0: judged once, the interval
    resamples documents only."""
    between: float = math.nan
    """Variance of the documents' values (between documents), for a sampled cell."""
    within: float = math.nan
    """Mean variance of one judge's samples of a document (between samples of a judge)."""
    members: float = math.nan
    """Mean variance of the panel members' values of a document (between panel members)."""
    agreement: tuple[tuple[str, float], ...] = ()
    """Krippendorff's alpha its runs recorded: ``("samples", a)`` among a judge's samples,
    ``("judges", a)`` among a panel's members (the mean over the cell's runs)."""
    clustered: bool = False
    """The interval resampled each document's samples too (``cluster_ci``): a sampled
    number of one judge. A sampled label or a panel resamples its documents' pooled values."""


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


def cluster_ci(
    clusters: Sequence[Sequence[float]], *, resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Percentile interval of the mean over documents, by a two-stage cluster bootstrap.

    Documents are resampled, and within each picked document its samples; a document's value
    is the mean of its drawn samples.
    """
    sizes = np.array([len(c) for c in clusters])
    if sizes.size == 1 and sizes[0] == 1:
        return float(clusters[0][0]), float(clusters[0][0])
    width = int(sizes.max())
    table = np.full((len(clusters), width), np.nan)
    for i, cluster in enumerate(sorted(clusters, key=lambda c: (len(c), sorted(c)))):
        table[i, : len(cluster)] = sorted(cluster)
    sizes = np.sum(~np.isnan(table), axis=1)
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(clusters), size=(resamples, len(clusters)))
    draws = np.floor(rng.random((resamples, len(clusters), width)) * sizes[picked][..., None])
    values = table[picked[..., None], draws.astype(int)]
    used = np.arange(width)[None, None, :] < sizes[picked][..., None]
    doc_means = np.where(used, values, 0.0).sum(axis=2) / sizes[picked]
    means = doc_means.mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [100.0 * tail, 100.0 * (1.0 - tail)])
    return float(low), float(high)


def variance_split(clusters: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(between documents, between samples) of the clusters' values.

    The variance of the documents' sample means, and the mean variance of a document's
    samples (ddof 1; NaN where undefined).
    """
    means = [float(np.mean(c)) for c in clusters]
    between = float(np.var(means, ddof=1)) if len(means) > 1 else math.nan
    spreads = [float(np.var(c, ddof=1)) for c in clusters if len(c) > 1]
    within = float(np.mean(spreads)) if spreads else math.nan
    return between, within


def judge_split(clusters: Sequence[Sequence[tuple[str, float]]]) -> tuple[float, float]:
    """(between a judge's samples, between panel members) of documents' labelled samples.

    Between samples: the mean, over each document's judges with two or more samples, of the
    variance of that judge's samples; between members: the mean, over documents with two or
    more judges, of the variance of the judges' means (ddof 1; NaN where undefined).
    """
    samples, members = [], []
    for cluster in clusters:
        by_judge: dict[str, list[float]] = {}
        for judge, value in cluster:
            by_judge.setdefault(judge, []).append(value)
        samples += [float(np.var(v, ddof=1)) for v in by_judge.values() if len(v) > 1]
        if len(by_judge) > 1:
            members.append(float(np.var([np.mean(v) for v in by_judge.values()], ddof=1)))
    return (
        float(np.mean(samples)) if samples else math.nan,
        float(np.mean(members)) if members else math.nan,
    )


def clusters_of(
    runs: Sequence[RunRecord], scores: Scores, samples: Samples, metric: str
) -> list[list[tuple[str, float]]] | None:
    """Each document's decided samples of ``metric`` in these runs.

    None when no run of them sampled its judge for it; a document judged once is a cluster
    of its one value.
    """
    if not any(metric in v for r in runs for v in samples.get(r.run_id, {}).values()):
        return None
    out = []
    for run in runs:
        drawn = samples.get(run.run_id, {})
        for doc, values in scores.get(run.run_id, {}).items():
            if metric not in values or math.isnan(values[metric]):
                continue
            decided = [(j, v) for j, v in drawn.get(doc, {}).get(metric, ()) if not math.isnan(v)]
            out.append(decided or [("", float(values[metric]))])
    return out or None


def _mean_of_samples(clusters: Sequence[Sequence[tuple[str, float]]], fact: Value | None) -> bool:
    """Does the two-stage bootstrap (``cluster_ci``) draw the same quantity as the point?

    Yes where each document's value is the mean of its samples. Not for a label (the run
    takes the samples' majority, ``runner.reliability.samples``) nor a panel (the mean or
    majority of its members' pooled values): a panel's 0.865 once came with [0.708, 0.837],
    the interval of its members' mean label. Those resample the documents' pooled values, as
    a judge asked once does.
    """
    kind = fact.kind if fact is not None else "number"
    judges = {judge for cluster in clusters for judge, _ in cluster}
    return kind != "label" and len(judges) <= 1


def _alphas(runs: Sequence[RunRecord], metric: str) -> tuple[tuple[str, float], ...]:
    """The alphas the runs recorded for ``metric`` (``<metric>/samples_alpha``...), averaged."""
    out = []
    for among in ("samples", "judges"):
        found = [
            r.metrics[f"{metric}/{among}_alpha"]
            for r in runs
            if f"{metric}/{among}_alpha" in r.metrics
        ]
        if found:
            out.append((among, float(np.mean(found))))
    return tuple(out)


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
    samples: Samples | None = None,
) -> Table:
    """Group ``runs`` into cells by the layout's keys and estimate every metric of each.

    A metric whose judge was sampled (``samples``, ``judge.samples=K``) or a panel gets its
    variance split; its interval resamples documents and, for a number of one judge, each
    document's samples (``cluster_ci``); the others resample documents. Every interval is of
    the quantity the point is: the documents' values as the run pooled them.
    """
    groups: dict[tuple[Key, Key], list[RunRecord]] = {}
    for run in runs:
        row = tuple(param(run, k) for k in layout.rows)
        column = tuple(param(run, k) for k in layout.columns)
        groups.setdefault((row, column), []).append(run)
    cells: dict[tuple[Key, Key, str], Estimate] = {}
    facts = value_facts.merged((r.tags, r.params, r.metrics) for r in runs)
    for (row, column), members in groups.items():
        for metric in metrics:
            per_run = [observations(r, scores.get(r.run_id, {}), metric) for r in members]
            values = [v for found in per_run for v in found]
            if not values:
                continue
            mean = float(np.mean(values))
            used = sum(1 for found in per_run if found)
            clusters = clusters_of(members, scores, samples or {}, metric)
            if clusters is None or len(clusters) != len(values):
                low, high = bootstrap_ci(
                    values, resamples=resamples, confidence=confidence, seed=seed
                )
                cells[(row, column, metric)] = Estimate(mean, low, high, len(values), used)
                continue
            flat = [[v for _, v in c] for c in clusters]
            clustered = _mean_of_samples(clusters, facts.get(metric))
            if clustered:
                low, high = cluster_ci(flat, resamples=resamples, confidence=confidence, seed=seed)
            else:  # the point pools otherwise: resample the documents' pooled values
                low, high = bootstrap_ci(
                    values, resamples=resamples, confidence=confidence, seed=seed
                )
            between, _ = variance_split(flat)
            within, panel = judge_split(clusters)
            cells[(row, column, metric)] = Estimate(
                mean,
                low,
                high,
                len(values),
                used,
                max(len(c) for c in clusters),
                between,
                within,
                panel,
                _alphas(members, metric),
                clustered,
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
        facts=facts,
    )
