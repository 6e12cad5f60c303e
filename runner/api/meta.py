"""The meta-evaluation toolkit: the tables a metric adds to ``python -m runner.report meta=true``.

A metric whose values people can judge too may declare ``meta_tables(inputs: MetaInput) ->
MetaTables``: given people's judgments recorded in the experiment (``MetaInput.judgments``:
``runner.api.human_format`` values such as ``ClaimsJudgment``) and the experiment's FINISHED
judged runs (``MetaInput.runs``: ``RunView``, their params, per-document values and
artifacts), it returns its tables of agreement with people and the notes saying what it left
out. The report writes each table as ``<name>.csv``, in ``meta.md`` and ``meta.tex``, beside
the core's tables (sentence flags, summary-level correlations, pairwise preferences).

The statistics of the meta-evaluation: agreement of flags, rank and linear correlation.
Small and explicit on purpose: each is checked in the tests against an independent
computation (scipy's ``kendalltau``/``pearsonr``, a worked Cohen's kappa), so the report
depends on numpy alone.

Every interval is a percentile bootstrap over the units that were judged (summaries, or
documents for Appendix J's verdicts): resample the units with replacement, recompute the
statistic from the resampled units' pooled counts or pairs, read the percentiles. Resamples
where the statistic is undefined (every value equal, no flag at all) are left out, and a
statistic undefined on the data itself is NaN with no interval (``Boot.run``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from runner.api.errors import ConfigError, DataError

Indices = np.ndarray
"""Positions of the units in one resample."""


@dataclass(frozen=True)
class Stat:
    """A statistic on the data, its bootstrap interval and how many units it came from."""

    value: float
    low: float
    high: float
    n: int
    """Units (summaries, documents, comparisons) behind it."""


@dataclass(frozen=True)
class Confusion:
    """Pooled sentence counts: judge flag vs human flag."""

    tp: float
    fp: float
    fn: float
    tn: float


def precision(c: Confusion) -> float:
    """Share of the judge's flags that people also flagged (NaN: the judge flagged nothing)."""
    return c.tp / (c.tp + c.fp) if c.tp + c.fp else math.nan


def recall(c: Confusion) -> float:
    """Share of the people's flags the judge also flagged (NaN: people flagged nothing)."""
    return c.tp / (c.tp + c.fn) if c.tp + c.fn else math.nan


def f1(c: Confusion) -> float:
    """Harmonic mean of precision and recall (NaN when neither side flagged anything)."""
    return 2 * c.tp / (2 * c.tp + c.fp + c.fn) if c.tp + c.fp + c.fn else math.nan


def kappa(c: Confusion) -> float:
    """Cohen's kappa of two binary raters: (observed - chance agreement) / (1 - chance).

    NaN when chance agreement is 1 (both raters gave one answer to everything).
    """
    n = c.tp + c.fp + c.fn + c.tn
    if not n:
        return math.nan
    observed = (c.tp + c.tn) / n
    chance = ((c.tp + c.fp) * (c.tp + c.fn) + (c.fn + c.tn) * (c.fp + c.tn)) / (n * n)
    return (observed - chance) / (1 - chance) if chance < 1 else math.nan


def pearson_r(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r; NaN when either side is constant or there are fewer than 2 pairs."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size < 2:
        return math.nan
    da, db = a - a.mean(), b - b.mean()
    norm = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / norm if norm > 0 else math.nan


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties in either ranking corrected for, as scipy's default).

    tau_b = (concordant - discordant) / sqrt((n0 - ties in x) * (n0 - ties in y)) over the
    n0 = n(n-1)/2 pairs; NaN when either side is constant. Quadratic in n: summaries of one
    study number in the hundreds.
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size < 2:
        return math.nan
    upper = np.triu_indices(a.size, k=1)
    sa = np.sign(a[:, None] - a[None, :])[upper]
    sb = np.sign(b[:, None] - b[None, :])[upper]
    untied_a, untied_b = np.count_nonzero(sa), np.count_nonzero(sb)
    if not untied_a or not untied_b:
        return math.nan
    return float(np.sum(sa * sb)) / math.sqrt(untied_a * untied_b)


def bootstrap(
    units: int,
    statistic: Callable[[Indices], float],
    *,
    resamples: int,
    confidence: float,
    seed: int,
) -> Stat:
    """``statistic`` on all units and its percentile-bootstrap interval over the units."""
    value = statistic(np.arange(units))
    if units == 0 or math.isnan(value):
        return Stat(value, math.nan, math.nan, units)
    rng = np.random.default_rng(seed)
    draws = np.array([statistic(rng.integers(0, units, size=units)) for _ in range(resamples)])
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return Stat(value, math.nan, math.nan, units)
    tail = (1.0 - confidence) / 2.0
    low, high = np.percentile(draws, [100.0 * tail, 100.0 * (1.0 - tail)])
    return Stat(value, float(low), float(high), units)


def pooled(counts: np.ndarray, rule: Callable[[Confusion], float]) -> Callable[[Indices], float]:
    """A statistic over resampled summaries: ``rule`` of their summed (tp, fp, fn, tn) rows."""

    def statistic(idx: Indices) -> float:
        tp, fp, fn, tn = counts[idx].sum(axis=0) if idx.size else (0.0, 0.0, 0.0, 0.0)
        return rule(Confusion(float(tp), float(fp), float(fn), float(tn)))

    return statistic


def paired(
    x: Sequence[float],
    y: Sequence[float],
    rule: Callable[[Sequence[float], Sequence[float]], float],
) -> Callable[[Indices], float]:
    """A statistic over resampled pairs: ``rule`` of the x and y values of the drawn units."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return lambda idx: rule(list(a[idx]), list(b[idx]))


def ratio(hits: Sequence[float], totals: Sequence[float]) -> Callable[[Indices], float]:
    """A statistic over resampled units: 100 x their summed hits / their summed totals."""
    h, t = np.asarray(hits, dtype=float), np.asarray(totals, dtype=float)

    def statistic(idx: Indices) -> float:
        total = float(t[idx].sum())
        return 100.0 * float(h[idx].sum()) / total if total else math.nan

    return statistic


# --- the tables ---------------------------------------------------------------------------


Cell = str | int | float | Stat | None
"""A table cell: text, a count, a number, or a statistic with its interval (None: empty)."""


@dataclass(frozen=True)
class Boot:
    """The report's bootstrap settings (``resamples``, ``confidence``, ``seed`` of its config)."""

    resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def run(self, units: int, statistic: Callable[[Indices], float]) -> Stat:
        """``statistic`` with its interval over ``units``."""
        return bootstrap(
            units,
            statistic,
            resamples=self.resamples,
            confidence=self.confidence,
            seed=self.seed,
        )

    def described(self, units: str) -> str:
        """What a cell is, for a caption: the value and its interval over ``units``."""
        return (
            f"value [{self.confidence:.0%} CI], percentile bootstrap over {units} "
            f"({self.resamples} resamples, seed {self.seed})"
        )


@dataclass(frozen=True)
class MetaTable:
    """One table: its file stem (``meta_...``), title, column titles, rows and caption."""

    name: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str


# --- what a metric's meta_tables hook is given and gives back -------------------------------


@dataclass(frozen=True)
class RunView:
    """One FINISHED run of the experiment that is not a human run, as a metric's tables read it."""

    run_id: str
    start_time: int
    """Milliseconds since the epoch (MLflow's), so the newest of several runs can win."""
    params: Mapping[str, str]
    values: Mapping[str, Mapping[str, float]]
    """doc_id -> ``<metric label>/<value>`` -> the run's per-document value (``scores.json``)."""
    read_text: Callable[[str], str | None] = field(repr=False, compare=False)
    """An artifact of the run by its path (``summaries.json``, ``config.yaml``), None if absent."""
    run_name: str = ""
    """The name the job gave the run."""

    def read_json(self, name: str) -> Any:
        """An artifact parsed as JSON; None when it is absent (ValueError when it is not JSON)."""
        text = self.read_text(name)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError as err:
            raise ValueError(f"run {self.run_id}'s artifact {name} is not JSON: {err}") from err


@dataclass(frozen=True)
class Anchored:
    """The human-scale mean of a value from a few people's labels and many judged documents.

    Prediction-powered inference (Angelopoulos et al., Science 2023) with PPI++ power
    tuning, computed by the authors' ``ppi_py``: the judge's mean over every document,
    corrected by the judge's error where people labelled, with a CI that stays valid however
    biased the judge is.
    """

    ppi: Stat
    """The prediction-powered estimate and its CI (``n``: people's labels)."""
    classical: Stat
    """People's labels alone: their mean and its CI (``ppi_py.classical_mean_ci``)."""
    judge_only: float
    """The judge's mean over every document it judged (no correction)."""
    judged: int
    """Documents the judge decided, people's included."""
    worth: float
    """The human labels the judge was worth: n x (classical CI width / PPI CI width)^2; NaN
    when either interval has no width."""


def anchored_mean(
    people: Sequence[float],
    judge_on_people: Sequence[float],
    judge_elsewhere: Sequence[float],
    confidence: float,
) -> Anchored:
    """PPI++ from paired (person, judge) values and the judge's values on other documents.

    Raises ``DataError`` (one line) with fewer than two people's labels paired with a
    judge's value, and ``ConfigError`` when ``ppi_py`` is not installed.
    """
    if len(people) != len(judge_on_people):
        raise ValueError("people's and the judge's values must pair up")
    if len(people) < 2:
        raise DataError(
            f"PPI needs two or more documents people labelled and the judge decided; got "
            f"{len(people)}: import more people's labels (python -m runner.annotate import)"
        )
    try:
        from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
    except ImportError as err:
        raise ConfigError(
            "report ppi=true needs ppi-python; pip install 'summarization-runner[ppi]'"
        ) from err
    y = np.asarray(people, dtype=float)
    yhat = np.asarray(judge_on_people, dtype=float)
    unlabeled = np.asarray(judge_elsewhere, dtype=float)
    if unlabeled.size == 0:
        unlabeled = yhat  # every judged document labelled: PPI's correction is then exact
    alpha = 1.0 - confidence
    low, high = (float(np.ravel(x)[0]) for x in ppi_mean_ci(y, yhat, unlabeled, alpha=alpha))
    point = float(np.ravel(ppi_mean_pointestimate(y, yhat, unlabeled))[0])
    c_low, c_high = (float(np.ravel(x)[0]) for x in classical_mean_ci(y, alpha=alpha))
    everything = np.concatenate([yhat, np.asarray(judge_elsewhere, dtype=float)])
    width = high - low
    # Undefined when either interval has no width (every label the same, or the judge's
    # correction exact): inf and 0 were printed for it, read as "priceless" and "worthless".
    classical = c_high - c_low
    worth = len(y) * (classical / width) ** 2 if width > 0 and classical > 0 else math.nan
    return Anchored(
        Stat(point, low, high, len(y)),
        Stat(float(y.mean()), c_low, c_high, len(y)),
        float(everything.mean()),
        int(everything.size),
        worth,
    )


@dataclass(frozen=True)
class MetaInput:
    """What ``meta_tables`` is given: people's judgments and the runs to hold against them."""

    judgments: Sequence[object]
    """Every human judgment recorded in the experiment (``runner.api.human_format`` values:
    ``ClaimsJudgment``, ``CoherenceAnnotation``...); a hook keeps the kinds it knows."""
    runs: Sequence[RunView]
    """The experiment's FINISHED runs that are not human runs, newest first."""
    boot: Boot
    judged: Mapping[str, RunView] = field(default_factory=dict)
    """Run id -> the run, for each system people's judgments name by run id (``run_label``)."""
    ppi: bool = False
    """``report ppi=true``: also give, for each value people labelled, its prediction-powered
    estimate (``anchored_mean``) in a table named ``meta_ppi_<...>``."""


@dataclass(frozen=True)
class MetaTables:
    """What ``meta_tables`` gives back: its tables, and a line for each thing it left out."""

    tables: tuple[MetaTable, ...] = ()
    notes: tuple[str, ...] = ()


# --- naming the runs people judged ---------------------------------------------------------


class NamedRun(Protocol):
    """A run as ``run_label`` reads it (a ``RunView``, or the report's own run records)."""

    @property
    def run_name(self) -> str:
        """The name the job gave the run."""
        ...

    @property
    def params(self) -> Mapping[str, str]:
        """The run's params."""
        ...


def labels_worth(worth: float) -> int | str:
    """The table cell of ``Anchored.worth``: a whole number of labels, or 'n/a'."""
    return int(round(worth)) if math.isfinite(worth) else "n/a"


def judge_identity(params: Mapping[str, str]) -> str:
    """The judge a run's values come from, as the run recorded it; '' when it has none.

    Its alias and model, and its temperature and samples where recorded ('gpt4:
    openai/gpt-4o, temperature 0.7, 3 samples'); a panel's view (``runner.report.meta``) as
    its members' aliases and models. A meta table keeps one row per identity, so three panel
    members served under one model name, or a sampled judge and a panel member of the same
    model, are never merged into one row.
    """
    alias, model = params.get("judge", ""), params.get("judge.model", "")
    head = model if not alias or alias == model else (f"{alias}: {model}" if model else alias)
    if not head:
        return ""
    settings = [head]
    temperature = params.get("judge.temperature", "")
    if temperature not in ("", "None"):
        settings.append(f"temperature {temperature}")
    samples = params.get("judge.samples", "")
    if samples not in ("", "1"):
        settings.append(f"{samples} samples")
    return ", ".join(settings)


SUMMARY_PARAMS = ("strategy", "model", "chunk", "data", "data.path")
"""The params that tell the summaries of two judged runs apart, for their labels."""


def run_label(system: str, judged: Mapping[str, NamedRun]) -> str:
    """A run as its distinguishing params and short id ('strategy=hier (1a2b3c4d)').

    The run's name when no such param differs among the judged runs; a named system (or a run
    not among ``judged``) as itself.
    """
    run = judged.get(system)
    if run is None:
        return system
    keys = [k for k in SUMMARY_PARAMS if len({r.params.get(k) for r in judged.values()}) > 1]
    name = ",".join(f"{k}={run.params.get(k, '—')}" for k in keys) or run.run_name
    return f"{name} ({system[:8]})"
