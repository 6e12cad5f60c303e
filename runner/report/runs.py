"""Which runs a report averages, and why the others are left out.

A report reads one sweep (the children of a parent run tagged ``runner.kind=sweep``) or, when
the experiment has no sweep, all of its runs. Left to choose, it reads the newest sweep with a
run to average and names each newer one it passed over (just started, empty, all failed), as
stopping at those would hide the last good sweep and skipping them unannounced would pass an
older one off as the latest. Only FINISHED runs with every document scored
are averaged (a run that skipped failed documents under ``on_error=continue`` is listed, not
averaged: its cell would silently cover other documents than its neighbours), and of several
FINISHED runs with one fingerprint only the newest: the older ones are the same experiment
run again (a rerun after a code or cache fix), so counting both would double its documents.
Of several fingerprints with the same params (a plugin file, a prompt or a plugin's version
edited between runs) only the newest is averaged, the older ones listed with what changed
(``runner.report.versions``).
Everything left out is returned with its reason, because a table that silently drops a
failed cell reads as a complete one.

How the averaged runs' params lay out as rows and columns is ``runner.report.layout``; its
names are imported back here for the importers of ``runner.report.runs``. This module is plain
Python over ``RunRecord``s: no pandas.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from runner.api.errors import ConfigError, DataError
from runner.report.layout import MISSING, Layout, layout, param, varying_keys
from runner.report.versions import newest_versions
from runner.tracking.reader import RunRecord
from runner.tracking.tags import FAILED_DOCUMENTS_TAG, RUN_KIND_TAG, STOPPED_TAG, SWEEP_KIND

__all__ = [  # the layout's names are imported back for the importers of this module
    "MISSING",
    "Excluded",
    "Layout",
    "Selection",
    "layout",
    "param",
    "select_runs",
    "varying_keys",
    "why_empty",
]


@dataclass(frozen=True)
class Excluded:
    """A run listed in the footnote instead of being averaged."""

    run_id: str
    """MLflow run id."""
    run_name: str
    """The run's name, as the MLflow UI shows it."""
    status: str
    """FAILED, 'FAILED (budget)', KILLED, RUNNING, 'FINISHED (2 documents failed)', ... or
    'superseded'."""
    reason: str
    """The run's ``failure`` tag, or which newer run supersedes it ('' when untagged)."""
    changed: tuple[str, ...] = ()
    """For an older version of a cell: what changed in the newer one (plugin file, prompt...)."""


@dataclass(frozen=True)
class Selection:
    """The runs of one report."""

    scope: str
    """One line saying what was read, for the printed header."""
    sweep_id: str | None
    """The sweep's parent run id, or None when all runs of the experiment were read."""
    runs: tuple[RunRecord, ...]
    """FINISHED runs, newest per fingerprint and per cell, newest first: the ones averaged."""
    excluded: tuple[Excluded, ...]
    """Everything else, newest first."""
    passed_over: tuple[str, ...] = ()
    """One line per sweep newer than the one read that had no run to average, saying why."""

    @property
    def older_versions(self) -> tuple[Excluded, ...]:
        """The runs left out because a newer version of their cell was averaged."""
        return tuple(e for e in self.excluded if e.changed)


def select_runs(records: Sequence[RunRecord], experiment: str, sweep: str | None) -> Selection:
    """The runs of the sweep ``sweep`` or, when the experiment has no sweep, all runs.

    ``sweep`` is a parent run id or name; None = the newest sweep with a run to average.
    ``records`` are all runs of the experiment, newest first (``find_runs`` order).
    """
    sweeps = [r for r in records if r.tags.get(RUN_KIND_TAG) == SWEEP_KIND]
    if sweep is None and not sweeps:
        scope = f"all {len(records)} runs of experiment '{experiment}' (it has no sweep)"
        return _finished(scope, None, records)
    children: dict[str, list[RunRecord]] = {}
    for run in records:
        if run.parent_run_id:
            children.setdefault(run.parent_run_id, []).append(run)
    if sweep is None:
        return _latest(sweeps, children, experiment)
    parent = _find_parent(records, sweeps, sweep, experiment)
    runs = children.get(parent.run_id, [])
    chosen = _of_sweep(parent, runs, experiment, "sweep")
    if not chosen.runs:
        raise DataError(_nothing_to_average(parent, runs, experiment))
    return chosen


def _of_sweep(
    parent: RunRecord, children: list[RunRecord], experiment: str, which: str
) -> Selection:
    """The sweep's runs to average and to list; a RUNNING parent is said to be unfinished."""
    scope = f"{which} {parent.run_id} ('{parent.run_name}') of experiment '{experiment}'"
    scope += f": {len(children)} runs"
    if parent.status == "RUNNING":
        scope += " (its parent run is still RUNNING: cells not run yet are missing)"
    return _finished(scope, parent.run_id, children)


def _latest(
    sweeps: Sequence[RunRecord], children: dict[str, list[RunRecord]], experiment: str
) -> Selection:
    """The newest sweep with a run to average; each newer one is named with why it was not."""
    passed: list[str] = []
    for parent in sweeps:
        runs = children.get(parent.run_id, [])
        chosen = _of_sweep(parent, runs, experiment, "sweep" if passed else "the latest sweep")
        if chosen.runs and not passed:
            return chosen
        if chosen.runs:
            scope = f"{chosen.scope} (the latest sweep to report; {len(passed)} newer passed over)"
            return replace(chosen, scope=scope, passed_over=tuple(passed))
        why = why_empty(parent, runs)
        passed.append(f"passed over sweep {parent.run_id} ({parent.run_name}): {why}")
    shown = ", ".join(line.removeprefix("passed over ") for line in passed[:3])
    more = f", and {len(passed) - 3} more" if len(passed) > 3 else ""
    started = [p for p in sweeps if p.run_id in children]  # the newest with a child says why
    fix = (
        _fix(started[0], children[started[0].run_id])
        if started
        else f"wait for a running sweep to start its jobs, or rerun {_rerun(sweeps[0])}"
    )
    raise DataError(
        f"none of the {len(sweeps)} sweeps of experiment '{experiment}' has a FINISHED run to "
        f"report ({shown}{more}); {fix}"
    )


def why_empty(parent: RunRecord, children: Sequence[RunRecord]) -> str:
    """Why a sweep has no run to average: 'no FINISHED child (3 FAILED)', 'no child run'."""
    running = parent.status == "RUNNING"
    if not children:
        return "no child run yet (its parent run is still RUNNING)" if running else "no child run"
    counts = Counter(_outcome(run) for run in children)
    listed = ", ".join(f"{n} {what}" for what, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    listed += "; its parent run is still RUNNING" if running else ""
    kind = "complete FINISHED" if any(r.status == "FINISHED" for r in children) else "FINISHED"
    return f"no {kind} child{' yet' * running} ({listed})"


def _outcome(run: RunRecord) -> str:
    """A child's status for a count; a FINISHED one that skipped documents is not complete."""
    if run.status == "FINISHED" and run.failed_documents:
        return "FINISHED with failed documents"
    return run.status


def _nothing_to_average(parent: RunRecord, children: Sequence[RunRecord], experiment: str) -> str:
    """The error for an explicit sweep with no run to average: its cause and its fix."""
    sweep = f"sweep {parent.run_id} ('{parent.run_name}') of experiment '{experiment}'"
    if not children:
        return f"{sweep} has no child runs; give another sweep= (a parent run id)"
    return f"{sweep} has no run to report: {why_empty(parent, children)}; {_fix(parent, children)}"


def _fix(parent: RunRecord, children: Sequence[RunRecord]) -> str:
    """What to do about a sweep with no run to average: read why, then rerun or wait."""
    failures = [r.tags["failure"].strip() for r in children if r.tags.get("failure", "").strip()]
    if not failures and parent.status == "RUNNING":
        return "wait for it to finish, or give sweep= an older sweep"
    if failures:
        why = f"each child's 'failure' tag says why (newest: {failures[0].splitlines()[0][:120]})"
    else:
        why = "each child's logs and failures.json say why"
    return (
        f"{why}; fix that and rerun {_rerun(parent)} "
        "(it reruns only the cells without a FINISHED run)"
    )


def _rerun(parent: RunRecord) -> str:
    """The command that made the sweep (its ``sweep.overrides`` param), to run it again."""
    command = parent.params.get("sweep.overrides")
    return f"python -m runner -m {command}" if command else "the sweep's command"


def _find_parent(
    records: Sequence[RunRecord], sweeps: Sequence[RunRecord], wanted: str, experiment: str
) -> RunRecord:
    """The run named by id, or by name when one run has it."""
    by_id = [r for r in records if r.run_id == wanted]
    by_name = [r for r in sweeps if r.run_name == wanted]
    if by_id or len(by_name) == 1:
        return (by_id or by_name)[0]
    known = ", ".join(f"{r.run_id} ({r.run_name})" for r in sweeps[:5]) or "none"
    problem = "names several sweeps" if by_name else "is not a run"
    raise ConfigError(
        f"sweep={wanted} {problem} of experiment '{experiment}'; give a parent run id "
        f"(sweeps there, newest first: {known}) or leave sweep unset for the latest"
    )


def _finished(scope: str, sweep_id: str | None, runs: Iterable[RunRecord]) -> Selection:
    """Keep FINISHED runs, newest per fingerprint and per cell; list the rest with their reason."""
    kept: list[RunRecord] = []
    excluded: list[Excluded] = []
    newest: dict[str, RunRecord] = {}
    ordered = sorted(runs, key=lambda r: (r.start_time, r.run_id), reverse=True)
    for run in ordered:
        if run.tags.get(RUN_KIND_TAG) == SWEEP_KIND:
            continue  # a parent holds no results of its own
        if run.status != "FINISHED":
            stopped = run.tags.get(STOPPED_TAG)  # why the runner stopped it, e.g. 'budget'
            status = f"{run.status} ({stopped})" if stopped else run.status
            excluded.append(Excluded(run.run_id, run.run_name, status, run.tags.get("failure", "")))
        elif run.failed_documents:
            excluded.append(_incomplete(run))
        elif run.fingerprint and run.fingerprint in newest:
            newer = newest[run.fingerprint]
            reason = f"same fingerprint as the newer {newer.run_name} ({newer.run_id[:8]})"
            excluded.append(Excluded(run.run_id, run.run_name, "superseded", reason))
        else:
            if run.fingerprint:
                newest[run.fingerprint] = run
            kept.append(run)
    unfinished = [
        r for r in ordered if r.status != "FINISHED" and r.tags.get(RUN_KIND_TAG) != SWEEP_KIND
    ]
    kept, older = newest_versions(kept, unfinished)
    excluded += [
        Excluded(s.run.run_id, s.run.run_name, "superseded", s.reason, s.changed) for s in older
    ]
    position = {run.run_id: i for i, run in enumerate(ordered)}
    excluded.sort(key=lambda e: position[e.run_id])  # newest first, as the footnote lists them
    return Selection(scope, sweep_id, tuple(kept), tuple(excluded))


def _incomplete(run: RunRecord) -> Excluded:
    """A FINISHED run that skipped failed documents, as its footnote line."""
    n = run.failed_documents
    status = f"FINISHED ({n} document{'s' * (n > 1)} failed)"
    reason = f"on_error=continue skipped them; see failures.json (tag {FAILED_DOCUMENTS_TAG})"
    return Excluded(run.run_id, run.run_name, status, reason)
