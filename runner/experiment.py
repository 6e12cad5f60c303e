"""Run one job: documents -> chunks -> strategy -> summary + trace -> metrics -> MLflow.

Everything that can be checked before work starts (config, roles, keys, servers, chunk
vs context, metric setup, documents) is checked in ``runner/job.py`` before the MLflow
run exists. Once it exists, the run ends FINISHED, FAILED with the first cause, or KILLED
when the user interrupts (Ctrl-C, SIGTERM): never RUNNING forever, so a report never
counts a half-finished job.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from runner.call_log import CallLog, CallTotals
from runner.config import RunConfig
from runner.errors import Terminated
from runner.job import prepare
from runner.progress import Progress
from runner.run_logging import log_outcomes, log_setup
from runner.tracking import Tracker
from runner.work import run_documents


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


def run_name(overrides: tuple[str, ...]) -> str:
    """'strategy=hier,chunk=1024', or 'defaults' when nothing was overridden."""
    kept = [o for o in overrides if not o.startswith(("hydra.", "tracking.", "cache.", "progress"))]
    return ",".join(kept) or "defaults"


def end_status(err: BaseException) -> str:
    """KILLED when the user stopped the job, FAILED otherwise (MLflow's run statuses)."""
    return "KILLED" if isinstance(err, (KeyboardInterrupt, Terminated)) else "FAILED"


def run_experiment(config: RunConfig) -> RunResult:
    """Run one job end to end and log it as one MLflow run."""
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    progress = Progress(config.progress, label=config.strategy)
    cancel = threading.Event()
    with tempfile.TemporaryDirectory(prefix="runner-") as tmp:
        calls_file = Path(tmp) / "calls.jsonl"
        calls = CallLog(calls_file, on_call=progress.on_call)
        job = prepare(config, calls, cancel)
        timings["setup_s"], clock = _lap(clock)
        tracker = Tracker(config.tracking_uri, config.experiment, _artifact_root(config))
        name = run_name(config.overrides)
        tracker.start(name, tags={"fingerprint": job.fingerprint})
        timings["tracking_start_s"], clock = _lap(clock)
        try:
            log_setup(tracker, job)
            progress.set_total(len(job.items))
            outcomes = run_documents(job, progress)
            timings["documents_s"], clock = _lap(clock)
            system = log_outcomes(tracker, job, outcomes, calls.totals, timings)
            tracker.log_file(calls_file)
            tracker.finish("FINISHED")
            timings["logging_s"], clock = _lap(clock)
        except BaseException as err:
            cancel.set()
            tracker.log_file(calls_file)
            tracker.finish(end_status(err), reason=f"{type(err).__name__}: {err}")
            raise
        finally:
            progress.close()
    return RunResult(
        run_id=tracker.run_id,
        run_name=name,
        summaries={o.doc_id: o.result.summary for o in outcomes},
        system_metrics=system,
        totals=calls.totals,
        tracking_uri=config.tracking_uri,
        timings=timings,
    )


def _lap(since: float) -> tuple[float, float]:
    now = time.perf_counter()
    return now - since, now


def _artifact_root(config: RunConfig) -> Path | None:
    """Artifacts beside the default sqlite store, in mlruns/artifacts/."""
    if config.tracking_uri.startswith("sqlite:///"):
        return Path(config.tracking_uri[len("sqlite:///") :]).parent / "artifacts"
    return None
