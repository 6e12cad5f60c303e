"""Run one job: documents -> chunks -> strategy -> summary + trace -> metrics -> MLflow.

Everything that can be checked before work starts (config, roles, keys, servers, chunk
vs context, metric setup, documents) is checked in ``runner/run/prepare.py`` before the MLflow
run exists. Once it exists, the run ends FINISHED (with ``on_error=continue``, possibly with
failed documents recorded and tagged), FAILED with the first cause (a reached
budget included, tagged ``runner.stopped=budget``; its traceback logged as ``error.txt``,
so a plugin's bug is one line on the screen and whole in the run), or KILLED when the user
interrupts (Ctrl-C, SIGTERM): never RUNNING forever, so a report never counts a half-finished job.
A process killed outright (SIGKILL, OOM) cannot end its run: the next run of the same cell
marks it KILLED (``Tracker.close_stale``), and its calls are already in the response cache.

In a ``-m`` sweep (``runner/sweep/``) the run is a child of the sweep's parent run, is
named by the values the sweep varies, and is skipped when the same sweep already has a
FINISHED run with the same fingerprint (``force=true`` reruns it).
"""

from __future__ import annotations

import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from runner.api.errors import BudgetExceeded, Terminated
from runner.config.fingerprint import fingerprint
from runner.config.overrides import is_experiment_override, is_setting, parse_all
from runner.config.run_config import RunConfig
from runner.llm.batch import BatchCollector
from runner.llm.budget import Budget
from runner.llm.call_log import CallLog, CallTotals
from runner.llm.gateway import Gateway
from runner.llm.stop import Stop
from runner.run import preflight
from runner.run.document_loop import run_documents
from runner.run.plugin_calls import older_score_forms
from runner.run.preflight import Checked
from runner.run.prepare import Job, prepare
from runner.run.progress import Progress
from runner.run.recording import log_outcomes, log_setup
from runner.sweep.callback import job_run_name
from runner.sweep.parent import Sweep, current_sweep
from runner.tracking.secrets import redacted
from runner.tracking.sqlite_peek import done_cell
from runner.tracking.tags import (
    BATCH_IDS_TAG,
    BATCH_TAG,
    FINGERPRINT_TAG,
    PARENT_TAG,
    STOPPED_TAG,
    SUPERSEDED_TAG,
    SWEEP_TAG,
)
from runner.tracking.writer import Tracker, artifact_root
from runner.view.page import log_viewer


@dataclass(frozen=True)
class RunResult:
    """What a finished job reports back."""

    run_id: str
    """MLflow run id."""
    run_name: str
    """MLflow run name (from the overrides)."""
    summaries: dict[str, str]
    """doc_id -> summary."""
    system_metrics: dict[str, float]
    """System values of each metric, plus totals."""
    totals: CallTotals
    """Model-call accounting."""
    tracking_uri: str
    """Where the run is stored."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in each phase: setup, tracking start, documents, logging."""
    skipped: bool = False
    """True when a sweep cell was already done: ``run_id`` is the earlier run."""
    per_document: dict[str, dict[str, float]] = field(default_factory=dict)
    """doc_id -> its values."""
    headline: tuple[str, ...] = ()
    """The values to show first."""
    titles: dict[str, str] = field(default_factory=dict)
    """The declared title of each value that has one (``runner.api.value.Value.title``)."""
    warnings: tuple[str, ...] = ()
    """Why the numbers may not mean what they seem."""
    agreement: tuple[str, ...] = ()
    """How far the judge's repeated samples agree (``judge.samples``), a line per value."""
    failures: dict[str, str] = field(default_factory=dict)
    """doc_id -> cause of the documents that failed under ``on_error=continue``."""
    artifact_dir: str = ""
    """The run's artifact folder on this machine (summaries.json, viewer.html); empty when
    the store keeps artifacts elsewhere."""
    viewer: bool = False
    """True when viewer.html was logged."""
    description: str = ""
    """The run's one-line description (its roles and models included)."""
    experiment_id: str = ""
    """The MLflow experiment's id (for the UI link)."""


def run_name(overrides: tuple[str, ...], sweep: Sweep | None = None) -> str:
    """The run's name: in a sweep, the values it varies ('strategy=hier,chunk=2048').

    Else the overrides ('strategy=hier,chunk=1024'), or 'defaults HH:MM:SS' when nothing was
    overridden.
    """
    if sweep is not None and sweep.keys:
        named = job_run_name(overrides, sweep.keys)
        if named:
            return named
    kept = [o for o in overrides if is_experiment_override(o)]
    return ",".join(kept) or time.strftime("defaults %H:%M:%S")


def end_status(err: BaseException) -> str:
    """KILLED when the user stopped the job, FAILED otherwise (MLflow's run statuses)."""
    return "KILLED" if isinstance(err, (KeyboardInterrupt, Terminated)) else "FAILED"


def ignored_keys(config: RunConfig) -> list[str]:
    """One line per set or swept key the strategy does not use (e.g. chunk with baseline)."""
    ignores: dict[str, str] = config.strategy_module.IGNORES
    given = {o.key for o in parse_all(config.overrides)}
    return [
        f"{key}= has no effect with strategy={config.strategy}: {why}"
        for key, why in ignores.items()
        if key in given
    ]


def run_experiment(config: RunConfig, checked: Checked | None = None) -> RunResult:
    """Run one job end to end and log it as one MLflow run (or skip a finished sweep cell).

    ``checked``: what ``runner.run.preflight.check`` returned when the caller ran it (the
    command line does, before MLflow loads); run here otherwise. Once per job either way.
    """
    if checked is None:
        checked = preflight.check(config)
    for line in (*ignored_keys(config), *config.unasked):  # a single job refused unasked ones
        print(f"note: {line}", file=sys.stderr)
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    sweep = current_sweep()
    name = run_name(config.overrides, sweep)
    progress = Progress(config.progress, label=config.strategy, cell=name if sweep else "")
    cancel = Stop()
    done = _finished_cell(config, sweep, checked)  # before any setup: a resumed sweep skips fast
    if done:
        progress.close()
        return RunResult(
            done, name, {}, {}, CallTotals(), config.tracking_uri, timings, skipped=True
        )
    with tempfile.TemporaryDirectory(prefix="runner-") as tmp:
        calls_file = Path(tmp) / "calls.jsonl"
        budget = Budget(config.budget_usd, config.sweep_budget_usd, sweep.ledger if sweep else None)
        calls = CallLog(calls_file, on_call=progress.on_call, budget=budget)
        job = prepare(config, calls, cancel, checked)
        for line in older_score_forms(job.metrics):
            print(f"note: {line}", file=sys.stderr)
        timings["setup_s"], clock = _lap(clock)
        tracker = Tracker(
            config.tracking_uri, config.experiment, artifact_root(config.tracking_uri)
        )
        _close_stale(tracker, job.fingerprint, sweep)
        tracker.start(name, tags=_tags(job, sweep))
        timings["tracking_start_s"], clock = _lap(clock)
        collectors = _batch_collectors(job)
        for collector in collectors:
            collector.on_status = lambda line: tracker.set_tags({BATCH_TAG: line})
        try:
            params = log_setup(tracker, job)
            if sweep is not None:
                _supersede(tracker, sweep, params)
            progress.set_total(len(job.items))
            worked = run_documents(job, progress)
            timings["documents_s"], clock = _lap(clock)
            logged = log_outcomes(
                tracker, job, worked.outcomes, calls.totals, timings, worked.failures
            )
            tracker.log_file(calls_file)
            _tag_batches(tracker, collectors)
            viewer = log_viewer(tracker.client, tracker.run_id)  # never fails the run
            tracker.finish("FINISHED")
            timings["logging_s"], clock = _lap(clock)
        except BaseException as err:
            cancel.set()
            for note in filter(None, (c.in_flight() for c in collectors)):
                print(note, file=sys.stderr, flush=True)
            tracker.log_file(calls_file)
            _tag_batches(tracker, collectors)
            if isinstance(err, BudgetExceeded):
                tracker.set_tags({STOPPED_TAG: "budget"})
            if end_status(err) == "FAILED":
                log_error(tracker, err)
            tracker.finish(end_status(err), reason=f"{type(err).__name__}: {err}")
            raise
        finally:
            progress.close()
            for collector in collectors:
                collector.close()
    return RunResult(
        run_id=tracker.run_id,
        run_name=name,
        summaries={o.doc_id: o.result.summary for o in worked.outcomes},
        system_metrics=logged.system,
        totals=calls.totals,
        tracking_uri=config.tracking_uri,
        timings=timings,
        per_document=logged.per_document,
        headline=logged.headline,
        titles=logged.titles,
        warnings=logged.warnings,
        agreement=logged.agreement,
        failures=worked.failures,
        artifact_dir=local_artifact_dir(tracker),
        description=describe(job),
        experiment_id=tracker.experiment_id,
        viewer=viewer,
    )


ERROR_FILE = "error.txt"
"""The artifact holding the full traceback of a FAILED run (the screen shows one line)."""


def log_error(tracker: Tracker, err: BaseException) -> None:
    """The traceback behind a failure (a plugin's own frames included) as ``error.txt``.

    Best effort: the run must still end FAILED when the store refuses the artifact.
    """
    text = "".join(traceback.format_exception(err))
    try:
        tracker.log_text(text, ERROR_FILE)
    except Exception as failed:  # noqa: BLE001 - the failure's reason is still its tag
        print(f"note: could not log {ERROR_FILE}: {failed}", file=sys.stderr)


def local_artifact_dir(tracker: Tracker) -> str:
    """The run's artifact folder when it is a local path (a sqlite or file store)."""
    try:
        uri = tracker.client.get_run(tracker.run_id).info.artifact_uri or ""
    except Exception:  # noqa: BLE001  # only a convenience for the printed summary
        return ""
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(uri).path)
    return uri if uri.startswith("/") else ""


def _finished_cell(config: RunConfig, sweep: Sweep | None, checked: Checked) -> str | None:
    """The run that makes this cell done in this sweep, unless ``force``.

    This is the sweeper's own rule (``done_cell``), for other sweepers and for a cell finished
    in the meantime.
    """
    if sweep is None or config.force:
        return None
    cell = fingerprint(config, checked.prompts)
    return done_cell(config.tracking_uri, config.experiment, sweep.run_id, cell)


def _close_stale(tracker: Tracker, fingerprint: str, sweep: Sweep | None) -> None:
    """Runs of this cell left RUNNING by a killed process end KILLED, and we say so."""
    closed = tracker.close_stale(fingerprint, sweep.run_id if sweep else None)
    if closed:
        print(
            f"note: marked {len(closed)} run(s) of this cell KILLED, "
            f"left RUNNING by a process that is gone: {', '.join(closed)}",
            file=sys.stderr,
        )


def _supersede(tracker: Tracker, sweep: Sweep, params: dict[str, str]) -> None:
    """A cell this sweep has FINISHED, run again (``force=true``, a changed plugin): say so.

    The earlier job is tagged superseded, so the sweep's view of its results shows this job's
    row and not both; the view of every job still lists it. Cells compare by their params,
    settings aside (``is_setting``), as a report's versions do.
    """
    cell = _cell(params)
    older = tracker.supersede(sweep.run_id, lambda other: _cell(other) == cell)
    if older:
        print(
            f"note: this job runs again a cell the sweep has FINISHED (run {', '.join(older)}): "
            f"the sweep's view now shows this job's row, the earlier one is tagged "
            f"{SUPERSEDED_TAG}",
            file=sys.stderr,
        )


def _cell(params: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in params.items() if not is_setting(k)}


def _batch_collectors(job: Job) -> list[BatchCollector]:
    """The job's batch collectors, once each (roles on one model share one)."""
    found = {id(g.batch_collector): g.batch_collector for g in job.roles.values()}
    return [c for c in found.values() if c is not None]


def _tag_batches(tracker: Tracker, collectors: list[BatchCollector]) -> None:
    """The batches that answered the run (submitted by it or by a run stopped before it)."""
    ids = [b for c in collectors for b in (*c.submitted, *c.joined)]
    if ids:
        tracker.set_tags({BATCH_IDS_TAG: ",".join(dict.fromkeys(ids))})


def _tags(job: Job, sweep: Sweep | None) -> dict[str, str]:
    """Fingerprint, a one-line description for the UI, and the parent when in a sweep."""
    tags = {FINGERPRINT_TAG: job.fingerprint, "mlflow.note.content": describe(job)}
    if sweep is not None:
        tags.update({PARENT_TAG: sweep.run_id, SWEEP_TAG: sweep.run_id})
    return tags


def describe(job: Job) -> str:
    """The run's one-line description: strategy, each role's model, data, chunk, overrides.

    A judge or evaluator that is the summarizer's own model says so: self-evaluation.
    """
    config = job.config
    return (
        f"{config.strategy} ({roles_line(job.roles) or 'no model'}) "
        f"on {len(job.items)} document(s) "
        f"from data={config.data.source}, chunk={config.chunk}; "
        f"overrides: {redacted(' '.join(config.overrides)) or '(none)'}"
    )


def roles_line(roles: dict[str, Gateway]) -> str:
    """``model=claude (anthropic/...), judge=claude (the summarizer's own model)``."""
    summarizer = roles.get("model")
    parts = []
    for role, gateway in roles.items():
        spec = gateway.spec
        same = (
            summarizer is not None
            and role != "model"
            and (spec.model, spec.api_base) == (summarizer.spec.model, summarizer.spec.api_base)
        )
        what = "the summarizer's own model" if same else spec.model
        parts.append(f"{role}={gateway.name} ({what})")
    return ", ".join(parts)


def _lap(since: float) -> tuple[float, float]:
    now = time.perf_counter()
    return now - since, now
