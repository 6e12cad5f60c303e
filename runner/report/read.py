"""Reading a report's runs back from the store: the selection, the scores, SummIt's series.

Every read goes through ``runner.tracking`` (``reader`` for runs and scores, the ``Tracker``
for a metric's whole history), imported inside the functions so that ``--help`` and config
errors stay quick. An empty result is a ``DataError`` saying why (a name the store lacks,
listing those it has; an experiment nothing was logged to; a sweep with no FINISHED run).
Split from ``runner.report.make``, which lays out, writes and logs what is read here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runner.api.errors import ConfigError, DataError
from runner.report.config import ReportConfig

if TYPE_CHECKING:
    from runner.report.plots import Histories, History
    from runner.report.runs import Selection
    from runner.report.table import Scores
    from runner.tracking.reader import RunRecord

_LISTED = 20  # experiments named in the error for an unknown one


def check_store(uri: str) -> None:
    """A sqlite URI must name an existing file: MLflow would create an empty store instead."""
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).exists():
        raise ConfigError(
            f"tracking.uri={uri} names no database file; give the store the runs were written to "
            "(the runner's default is sqlite:///<its folder>/mlruns/mlflow.db)"
        )


def read_scores(uri: str, runs: list[RunRecord]) -> Scores:
    """Each run's ``scores.json`` through ``runner.tracking.reader.scores_frame``."""
    from runner.tracking.reader import SCORE_COLUMNS, scores_frame

    frame = scores_frame(uri, runs=runs)
    names = [c for c in frame.columns if c not in SCORE_COLUMNS and not c.startswith("param.")]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for rec in frame.to_dict("records"):
        values = {n: float(rec[n]) for n in names if rec[n] == rec[n]}  # NaN: absent or undecided
        out.setdefault(str(rec["run_id"]), {})[str(rec["doc_id"])] = values
    return out


def histories(uri: str, runs: tuple[RunRecord, ...], names: Sequence[str]) -> Histories:
    """The series ``names`` of every run that logged one (their steps are the iterations).

    ``runner.tracking.reader`` reads only each metric's latest value; the whole series comes through
    the MLflow door's ``Tracker``, bound to each run (the only two modules importing mlflow).
    """
    from runner.tracking.writer import Tracker

    out: dict[str, dict[str, History]] = {}
    for run in runs:
        for name in names:
            if name in run.metrics:
                client = Tracker.for_run(uri, run.run_id).client
                history = client.get_metric_history(run.run_id, name)
                out.setdefault(run.run_id, {})[name] = sorted((m.step, m.value) for m in history)
    return out


def no_runs(uri: str, experiment: str) -> str:
    """Why ``experiment`` has no runs: a name the store lacks, or nothing logged to it yet.

    For a name the store lacks, the names it has are listed, since that is most often a typo.
    """
    from runner.tracking.reader import experiments

    counts = experiments(uri)
    others = {
        name: n
        for name, n in counts.items()
        if name != experiment and not (name == "Default" and n == 0)  # MLflow's own, unused
    }
    if experiment in counts:
        problem = f"experiment '{experiment}' exists in {uri} but has no runs"
        fix = f"run python -m runner tracking.experiment={experiment} first"
        there = "other experiments there"
    else:
        problem = f"experiment '{experiment}' does not exist in {uri}"
        fix = "check tracking.uri (the store the runs were written to)"
        there = "experiments there"
    if not others:
        return f"{problem}, and no other experiment there has runs; {fix}"
    listed = ", ".join(_count(name, n) for name, n in list(others.items())[:_LISTED])
    listed += f", and {len(others) - _LISTED} more" if len(others) > _LISTED else ""
    return f"{problem}; {there}: {listed}; set tracking.experiment=<name>"


def _count(name: str, runs: int) -> str:
    """'local_demo (2 runs)'; a count at the reader's limit is a lower bound."""
    from runner.tracking.reader import PAGE_SIZE

    more = "+" if runs >= PAGE_SIZE else ""
    return f"{name} ({runs}{more} run{'s' * (runs != 1)})"


def read_runs(config: ReportConfig) -> tuple[Selection, Scores]:
    """The selected runs and their per-document scores; a clear error when there are none."""
    from runner.report.runs import select_runs
    from runner.tracking.reader import find_runs

    check_store(config.uri)
    records = find_runs(config.uri, config.experiment)
    if not records:
        raise DataError(no_runs(config.uri, config.experiment))
    selection = select_runs(records, config.experiment, config.sweep)
    if not selection.runs:
        raise DataError(
            f"{selection.scope} has no FINISHED run to report "
            f"({len(selection.excluded)} not finished); rerun the failed jobs"
        )
    return selection, read_scores(config.uri, list(selection.runs))


def present_metrics_of(runs: tuple[RunRecord, ...], scores: Scores) -> set[str]:
    """Every metric some run has, run-level or per document."""
    have = {k for r in runs for k in r.metrics}
    return have | {k for docs in scores.values() for values in docs.values() for k in values}


def present_metrics(
    wanted: tuple[str, ...], runs: tuple[RunRecord, ...], scores: Scores
) -> list[str]:
    """The metrics of ``wanted`` that some run has, run-level or per document."""
    have = present_metrics_of(runs, scores)
    present = [m for m in wanted if m in have]
    if not present:
        raise DataError(
            f"none of metric_keys={list(wanted)} is in the selected runs; "
            f"they have e.g.: {', '.join(sorted(have)[:12])}{_undecided(runs)}"
        )
    return present


def _undecided(runs: tuple[RunRecord, ...]) -> str:
    """'; run 1a2b3c4d has them undecided for every document (...): keys', or ''."""
    return "".join(
        f"; run {run.run_id[:8]} has them undecided for every document (its judge decided "
        f"nothing): {', '.join(run.undecided)}"
        for run in runs
        if run.undecided
    )


def recorded_headline(runs: tuple[RunRecord, ...]) -> list[str]:
    """The headline metrics the runs recorded (tag ``runner.headline``), first seen first.

    Each job records its metrics' headline values as ``<label>/<value>`` under the label the
    run gave each metric, so a researcher's own metric (a loose module) is found the same way
    as a built-in one, without the report knowing any plugin by name. A run without the tag
    (made before it existed) or with an unreadable one adds nothing.
    """
    from runner.tracking.tags import HEADLINE_TAG

    found: dict[str, None] = {}
    for run in runs:
        try:
            names = json.loads(run.tags.get(HEADLINE_TAG) or "[]")
        except json.JSONDecodeError:
            continue
        if isinstance(names, list):
            found.update((name, None) for name in names if isinstance(name, str) and name)
    return list(found)
