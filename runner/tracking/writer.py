"""The one door to MLflow.

Uses ``MlflowClient`` with an explicit run id everywhere: never the fluent API's
process-global active run, because Hydra's basic launcher runs all jobs of a sweep in one
process and a leaked active run would swallow the next job.

Several jobs may write one sqlite store at once (the joblib launcher): sqlite serializes
writers and answers "database is locked" when a writer waits too long, so every write is
retried with backoff (``_retrying``). For many machines, point ``tracking.uri`` at one
``mlflow server`` instead, which is then the single writer.

A process killed outright (SIGKILL, OOM, power) cannot end its run, so every run records its
owner (``runner.pid``, ``runner.host``, ``runner.pid_start``) and the next run of the same cell
marks runs whose owner is gone KILLED (``close_stale``). A new sqlite store is created under a
temporary name and renamed into place, so a kill during MLflow's schema migrations never
leaves a half-migrated store behind (MLflow would refuse to open it again).

Every experiment it creates or opens records its kind (runs, not a GenAI app), and each run
adds its headline metrics to the experiment's runs-table view: what the UI's first screen
shows (``runner/ui.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import random
import re
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from runner.ui import KIND_TAG, RUNS_KIND, VIEW_TAG

_MAX_PARAM = 500  # MLflow's limit is 6000 chars; short values keep the UI readable
T = TypeVar("T")
PID_TAG, HOST_TAG, PID_START_TAG = "runner.pid", "runner.host", "runner.pid_start"
"""Who owns a run: its process id, host name, and the process's start (to tell a reused pid)."""
STALE_TAG = "runner.stale"
"""Set on a run marked KILLED because its process had died without ending it."""


def artifact_root(uri: str) -> Path | None:
    """Artifacts beside a sqlite store, in <store folder>/artifacts/; None = MLflow's default."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///") :]).parent / "artifacts"
    return None


def _sqlite_path(uri: str) -> Path | None:
    return Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """Serialize a new sqlite store's creation across processes: MLflow creates and migrates
    the schema on first access, and two processes doing it at once corrupt it.
    """
    if not uri.startswith("sqlite:///"):
        yield
        return
    lock = Path(uri[len("sqlite:///") :] + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _create_store(uri: str, artifact_root: Path | None) -> None:
    """Create a missing sqlite store atomically; call under ``_store_lock``.

    MLflow builds a new store by running dozens of schema migrations, and sqlite commits each DDL
    statement on its own: a process killed half-way leaves a store that every later open
    rejects ("out-of-date database schema" or a failed re-migration). So the store is built
    beside its final name and renamed, and a killed attempt only leaves a partial file that
    the next attempt replaces.
    """
    path = _sqlite_path(uri)
    if path is None or "?" in uri or (path.exists() and path.stat().st_size > 0):
        return  # an empty file is what a bare sqlite3.connect leaves: no store yet
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    partial = path.with_name(path.name + ".creating")
    for leftover in (
        partial,
        *(partial.with_name(partial.name + e) for e in ("-journal", "-wal", "-shm")),
    ):
        leftover.unlink(missing_ok=True)
    partial_uri = f"sqlite:///{partial}"
    quiet = logging.getLogger(
        "mlflow.store.db.utils"
    )  # "Creating initial MLflow database tables..."
    level = quiet.level
    quiet.setLevel(
        logging.WARNING
    )  # a new user's first run shows our output, not MLflow's migrations
    try:
        store = SqlAlchemyStore(partial_uri, str(artifact_root or path.parent / "artifacts"))
    finally:
        quiet.setLevel(level)
    store.engine.dispose()  # closed before the rename: no connection may outlive its file name
    getattr(SqlAlchemyStore, "_engine_map", {}).pop(partial_uri, None)
    os.replace(partial, path)


def owner_tags() -> dict[str, str]:
    """Tags naming this process as a run's owner, so a later run can tell it died."""
    pid = os.getpid()
    return {
        PID_TAG: str(pid),
        HOST_TAG: socket.gethostname(),
        PID_START_TAG: _process_start(pid) or "",
    }


def _process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), else None.

    A pid is reused once its process is gone; the start time tells the two apart.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]  # a zombie is dead, just not reaped


def owner_alive(tags: dict[str, str]) -> bool:
    """False only when the run's owner is provably gone: a process of this host whose pid is
    unused, a zombie, or reused by a later process. Unknown owners count as alive.
    """
    if tags.get(HOST_TAG) != socket.gethostname() or not tags.get(PID_TAG, "").isdigit():
        return True  # another machine's run, or one from before owners were recorded
    pid = int(tags[PID_TAG])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    started = _process_start(pid)
    if Path("/proc").is_dir() and started is None:
        return False  # a zombie (or it has just exited)
    return not (tags.get(PID_START_TAG) and started and started != tags[PID_START_TAG])


def _retrying(call: Callable[[], T], attempts: int = 8, also: tuple[str, ...] = ()) -> T:
    """``call()``, again after a short random wait while sqlite says the database is locked
    (or gives another transient error named in ``also``).
    """
    for attempt in range(attempts):
        try:
            return call()
        except Exception as err:  # MlflowException or sqlalchemy's OperationalError
            transient = any(m in str(err) for m in ("database is locked", *also))
            if not transient or attempt == attempts - 1:
                raise
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
    raise AssertionError("unreachable")


_BAD_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_name(name: str) -> str:
    """A name MLflow accepts (alphanumerics, _ - . / and spaces)."""
    return _BAD_NAME.sub("_", name)


class Tracker:
    """One MLflow run: params, metrics, artifacts, and its final status."""

    def __init__(self, uri: str, experiment: str, artifact_root: Path | None = None) -> None:
        with _store_lock(uri):  # MlflowClient() itself creates and migrates a missing store
            _create_store(uri, artifact_root)
            self.client = MlflowClient(tracking_uri=uri)
            self.experiment_id = self._experiment(experiment, artifact_root)
        self.run_id = ""

    def _experiment(self, name: str, artifact_root: Path | None) -> str:
        """Get or create, safely when several jobs start at once; either way the experiment
        ends up with a kind (``KIND_TAG``), one set by the user left as it is.
        """
        for _ in range(5):
            found = self.client.get_experiment_by_name(name)
            if found is not None:
                if KIND_TAG not in found.tags:  # made by older code, or by plain MLflow
                    self._set_kind(str(found.experiment_id))
                return str(found.experiment_id)
            try:
                location = (artifact_root / name).as_uri() if artifact_root else None
                kind = {KIND_TAG: RUNS_KIND}
                return str(
                    self.client.create_experiment(name, artifact_location=location, tags=kind)
                )
            except MlflowException:
                time.sleep(0.2)  # another job created it first (unique constraint): look again
        raise RuntimeError(f"could not create or find MLflow experiment {name!r}")

    def _set_kind(self, experiment_id: str) -> None:
        _retrying(lambda: self.client.set_experiment_tag(experiment_id, KIND_TAG, RUNS_KIND))

    @classmethod
    def for_run(cls, uri: str, run_id: str) -> Tracker:
        """A tracker bound to an existing run (e.g. a sweep's parent, from another process)."""
        tracker = cls.__new__(cls)
        tracker.client = MlflowClient(tracking_uri=uri)
        tracker.run_id = run_id
        tracker.experiment_id = tracker.client.get_run(run_id).info.experiment_id
        return tracker

    def start(self, run_name: str, tags: dict[str, str]) -> str:
        """Create the run (status RUNNING, its owner tagged in the same write) and return its id."""
        tags = {**owner_tags(), **tags}
        run = _retrying(
            lambda: self.client.create_run(self.experiment_id, run_name=run_name, tags=tags)
        )
        self.run_id = run.info.run_id
        return self.run_id

    def resume_or_start(self, tags: dict[str, str], run_name: str, description: str) -> str:
        """The newest run carrying all ``tags`` (set RUNNING again), or a new one."""
        query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
        found = self.client.search_runs(
            [self.experiment_id], query, max_results=1, order_by=["attributes.start_time DESC"]
        )
        if found:
            self.run_id = found[0].info.run_id
            _retrying(lambda: self.client.update_run(self.run_id, status="RUNNING"))
            self.set_tags(owner_tags())
            return self.run_id
        return self.start(run_name, {**tags, "mlflow.note.content": description})

    def finished_run(self, fingerprint: str, parent: str | None) -> str | None:
        """The newest FINISHED run with ``fingerprint`` (within the sweep ``parent``, if given)."""
        query = f"tags.fingerprint = '{fingerprint}' and attributes.status = 'FINISHED'"
        if parent:
            query += f" and tags.`mlflow.parentRunId` = '{parent}'"
        found = self.client.search_runs(
            [self.experiment_id], query, max_results=1, order_by=["attributes.start_time DESC"]
        )
        return found[0].info.run_id if found else None

    def close_stale(self, fingerprint: str, parent: str | None) -> list[str]:
        """Mark KILLED the RUNNING runs of this cell whose process died without ending them.

        The cell is ``fingerprint`` within the sweep ``parent``, or outside any sweep when
        ``parent`` is None. Runs of live processes and of other hosts are left alone. Returns
        the ids marked, so the caller can say so.
        """
        query = f"tags.fingerprint = '{fingerprint}' and attributes.status = 'RUNNING'"
        found = _retrying(
            lambda: self.client.search_runs([self.experiment_id], query, max_results=1000)
        )
        stale = [
            r
            for r in found
            if r.data.tags.get("mlflow.parentRunId") == parent and not owner_alive(r.data.tags)
        ]
        for run in stale:
            tags = run.data.tags
            self._mark_killed(
                run.info.run_id,
                f"process {tags[PID_TAG]} on {tags[HOST_TAG]} ended without "
                f"closing this run (killed or crashed); marked KILLED by process {os.getpid()}",
            )
        return [r.info.run_id for r in stale]

    def _mark_killed(self, run_id: str, why: str) -> None:
        marks = [RunTag(STALE_TAG, "owner process gone"), RunTag("failure", why)]
        _retrying(lambda: self.client.log_batch(run_id, tags=marks))
        _retrying(lambda: self.client.set_terminated(run_id, "KILLED"))

    def log_params(self, params: dict[str, Any]) -> None:
        """Params as short strings (long values are cut; config.yaml has them whole)."""
        items = [Param(k, str(v)[:_MAX_PARAM]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            batch = items[i : i + 100]
            _retrying(lambda: self.client.log_batch(self.run_id, params=batch))

    def log_metrics(self, values: dict[str, float], step: int = 0) -> None:
        """Finite numbers only; NaN is skipped (the reason is in the run's notes)."""
        now = int(time.time() * 1000)
        items = [
            Metric(metric_name(k), float(v), now, step)
            for k, v in values.items()
            if v is not None and not math.isnan(float(v))
        ]
        for i in range(0, len(items), 500):
            batch = items[i : i + 500]
            _retrying(lambda: self.client.log_batch(self.run_id, metrics=batch))

    def set_tags(self, tags: dict[str, str]) -> None:
        """Tags (git commit, fingerprint, failure reason, ...)."""
        items = [RunTag(k, str(v)) for k, v in tags.items()]
        _retrying(lambda: self.client.log_batch(self.run_id, tags=items))

    def show_columns(self, metrics: list[str], params: list[str]) -> None:
        """Add these metric and param columns to the experiment's runs-table view (``VIEW_TAG``).

        MLflow's runs table shows no metric until the user picks one, and keeps that choice
        in the browser only; a shared view is the one state it reads from the store. Columns
        other runs added stay (a sweep over metric groups shows every headline).
        """
        tags = self.client.get_experiment(self.experiment_id).tags
        try:
            state = json.loads(tags.get(VIEW_TAG, "{}"))
        except ValueError:
            state = {}
        state = state if isinstance(state, dict) else {}  # an unreadable view is replaced
        shown = list(state.get("selectedColumns", []))
        wanted = [f"metrics.`{metric_name(m)}`" for m in metrics]
        wanted += [f"params.`{p}`" for p in params]
        columns = list(dict.fromkeys([*shown, *wanted]))
        if columns != shown:
            value = json.dumps({**state, "selectedColumns": columns})
            _retrying(lambda: self.client.set_experiment_tag(self.experiment_id, VIEW_TAG, value))

    def log_table(self, columns: dict[str, list[Any]], artifact_file: str) -> None:
        """A table artifact (MLflow's table format: the UI shows it as a table)."""
        self.client.log_table(self.run_id, columns, artifact_file)

    def log_dataset(self, name: str, digest: str, source: str, rows: int) -> None:
        """The run's input documents, shown in the UI's Dataset column."""
        from mlflow.entities import Dataset, DatasetInput, InputTag

        dataset = Dataset(
            name=name,
            digest=digest,
            source_type="local",
            source=json.dumps({"uri": source}),
            profile=json.dumps({"num_rows": rows}),
        )
        tags = [InputTag("mlflow.data.context", "summarize")]
        # Two jobs of a sweep logging the same new dataset race in MLflow's check-then-insert;
        # the loser's retry finds the winner's row and links it.
        _retrying(
            lambda: self.client.log_inputs(self.run_id, datasets=[DatasetInput(dataset, tags)]),
            also=("UNIQUE constraint failed: datasets",),
        )

    def log_json(self, obj: Any, artifact_file: str) -> None:
        """A JSON artifact."""
        self.client.log_text(
            self.run_id, json.dumps(obj, indent=2, ensure_ascii=False), artifact_file
        )

    def log_text(self, text: str, artifact_file: str) -> None:
        """A text artifact."""
        self.client.log_text(self.run_id, text, artifact_file)

    def log_file(self, path: Path, artifact_path: str | None = None) -> None:
        """A file from disk as an artifact."""
        self.client.log_artifact(self.run_id, str(path), artifact_path)

    def finish(self, status: str, reason: str = "") -> None:
        """End the run FINISHED, FAILED or KILLED; the reason of a failure becomes a tag."""
        if not self.run_id:
            return
        if reason:
            self.set_tags({"failure": reason[:5000]})
        _retrying(lambda: self.client.set_terminated(self.run_id, status))


def tracing_client(tracking_uri: str) -> Any:
    """MLflow's tracing client for this store (``runner/tracking/traces.py`` builds the traces)."""
    from mlflow.tracing.client import TracingClient

    return TracingClient(tracking_uri)


def store_trace(
    tracing: Any,
    experiment_id: str,
    trace_id: str,
    rows: list[dict[str, Any]],
    *,
    start_ms: int,
    duration_ms: int,
    failed: bool,
    previews: tuple[str, str],
    metadata: dict[str, str],
    tags: dict[str, str],
) -> None:
    """Write one finished trace: its info, then all its spans (``rows``, MLflow's span dicts)
    at once, as MLflow's own exporter does, retried while a shared sqlite file is locked.
    """
    from mlflow.entities import TraceInfo, TraceLocation, TraceState
    from mlflow.entities.span import Span

    info = TraceInfo(
        trace_id=trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=start_ms,
        execution_duration=duration_ms,
        state=TraceState.ERROR if failed else TraceState.OK,
        request_preview=previews[0],
        response_preview=previews[1],
        trace_metadata=metadata,
        tags=tags,
    )
    spans = [Span.from_dict(row) for row in rows]
    _retrying(lambda: tracing.start_trace(info))
    _retrying(lambda: tracing.log_spans(experiment_id, spans))
