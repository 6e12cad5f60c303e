"""The one door to MLflow.

Uses ``MlflowClient`` with an explicit run id everywhere: never the fluent API's
process-global active run, because Hydra's basic launcher runs all jobs of a sweep in one
process and a leaked active run would swallow the next job.

Every write is retried while a shared sqlite store is locked, and a new store is created
safely (``runner/tracking/store.py``). Every run records its owner process, and the next run
of the same cell marks KILLED the runs whose owner died (``runner/tracking/owners.py``).

Every experiment it creates or opens records its kind (runs, not a GenAI app), and each run
adds its headline metrics to the runs-table views the printed links open: what the UI's first
screen shows (``runner/ui.py``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from runner.api.errors import ConfigError
from runner.tracking.owners import (
    HOST_TAG,
    PID_TAG,
    RAY_NODE_TAG,
    STALE_TAG,
    owner_alive,
    owner_tags,
)
from runner.tracking.owners import PID_START_TAG as PID_START_TAG  # re-exported for callers
from runner.tracking.runs_view import (
    KIND_TAG,
    RUNS_KIND,
    VIEW_PREFIX,
    VIEW_TAG,
    run_filter,
    run_view_key,
    sweep_all_view_key,
    sweep_view,
    sweep_view_key,
    view_state,
    with_columns,
)
from runner.tracking.runs_view import metric_name as metric_name  # re-exported
from runner.tracking.secrets import redacted
from runner.tracking.store import artifact_root as artifact_root  # re-exported for callers
from runner.tracking.store import retrying, store_lock, store_to_build
from runner.tracking.tags import PARENT_TAG, SUPERSEDED_TAG

_MAX_PARAM = 500  # MLflow's limit is 6000 chars; short values keep the UI readable

# Against a tracking server MLflow's client prints "View run ... at" and "View experiment at"
# on stdout when a run ends: two lines per job between the runner's own, which already
# give the runs-table link (the jobs side by side). A user who sets it keeps MLflow's choice.
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


def _create_store(uri: str, artifact_root: Path | None) -> None:
    """Create a missing sqlite store atomically; call under ``store_lock``.

    MLflow builds a new store by running dozens of schema migrations, and sqlite commits each DDL
    statement on its own: a process killed half-way leaves a store that every later open
    rejects ("out-of-date database schema" or a failed re-migration). So the store is built
    beside its final name and renamed, and a killed attempt only leaves a partial file that
    the next attempt replaces.
    """
    path = store_to_build(uri)
    if path is None:
        return
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    building = path.with_name(path.name + ".creating")
    for suffix in ("", "-journal", "-wal", "-shm"):
        building.with_name(building.name + suffix).unlink(missing_ok=True)
    building_uri, root = f"sqlite:///{building}", str(artifact_root or path.parent / "artifacts")
    # Quiet "Creating initial MLflow database tables...": a first run shows ours, not MLflow's.
    quiet = logging.getLogger("mlflow.store.db.utils")
    level = quiet.level
    quiet.setLevel(logging.WARNING)
    try:  # MLflow's store constructor is unannotated, so strict mypy calls it untyped
        store = SqlAlchemyStore(building_uri, root)  # type: ignore[no-untyped-call]
    finally:
        quiet.setLevel(level)
    store.engine.dispose()  # closed before the rename: no connection may outlive its file name
    getattr(SqlAlchemyStore, "_engine_map", {}).pop(building_uri, None)
    os.replace(building, path)


@contextlib.contextmanager
def _permitted(uri: str, experiment: str) -> Iterator[None]:
    """A tracking server's 403 (MLflow's basic-auth app) as one line naming the fix.

    A user that may only read an experiment (the app's default permission) is refused its
    first write; MLflow would end the command with its traceback.
    """
    try:
        yield
    except MlflowException as err:
        status = err.get_http_status_code()  # type: ignore[no-untyped-call]
        if status != 403 and "error code 403" not in str(err):
            raise
        from runner.tracking.store import shown

        user = os.environ.get("MLFLOW_TRACKING_USERNAME") or "this user"
        raise ConfigError(
            f"tracking.uri={shown(uri)}: the server does not let {user} write to experiment "
            f"{experiment!r} (403); ask its admin for EDIT on it, or choose a "
            "tracking.experiment=NAME of your own (its creator may write to it)"
        ) from err


class Tracker:
    """One MLflow run: params, metrics, artifacts, and its final status."""

    def __init__(self, uri: str, experiment: str, artifact_root: Path | None = None) -> None:
        """Open (creating if missing) the store at ``uri`` and the experiment; no run yet."""
        with store_lock(uri):  # MlflowClient() itself creates and migrates a missing store
            _create_store(uri, artifact_root)
            self.client = MlflowClient(tracking_uri=uri)
            with _permitted(uri, experiment):
                self.experiment_id = self._experiment(experiment, artifact_root)
        self.experiment = experiment
        self.uri = uri
        self.run_id = ""

    def _experiment(self, name: str, artifact_root: Path | None) -> str:
        """Get or create the experiment, safely when several jobs start at once.

        Either way the experiment ends up with a kind (``KIND_TAG``); one set by the user is
        left as it is.
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
        retrying(lambda: self.client.set_experiment_tag(experiment_id, KIND_TAG, RUNS_KIND))

    @classmethod
    def for_run(cls, uri: str, run_id: str) -> Tracker:
        """A tracker bound to an existing run (e.g. a sweep's parent, from another process)."""
        tracker = cls.__new__(cls)
        tracker.client = MlflowClient(tracking_uri=uri)
        tracker.uri = uri
        tracker.run_id = run_id
        tracker.experiment_id = tracker.client.get_run(run_id).info.experiment_id
        tracker.experiment = tracker.experiment_id  # (its id: enough for a message)
        return tracker

    def start(self, run_name: str, tags: dict[str, str]) -> str:
        """Create the run (status RUNNING, its owner tagged in the same write) and return its id."""
        tags = {**owner_tags(self.uri), **{k: redacted(str(v)) for k, v in tags.items()}}
        run_name = redacted(run_name)
        with _permitted(self.uri, self.experiment):
            run = retrying(
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
            retrying(lambda: self.client.update_run(self.run_id, status="RUNNING"))
            self.set_tags(owner_tags(self.uri))
            return self.run_id
        return self.start(run_name, {**tags, "mlflow.note.content": description})

    def close_stale(self, fingerprint: str, parent: str | None) -> list[str]:
        """Mark KILLED the RUNNING runs of this cell whose process died without ending them.

        The cell is ``fingerprint`` within the sweep ``parent``, or outside any sweep when
        ``parent`` is None. Runs of live processes and of other hosts are left alone. Returns
        the ids marked, so the caller can say so.
        """
        query = f"tags.fingerprint = '{fingerprint}' and attributes.status = 'RUNNING'"
        found = retrying(
            lambda: self.client.search_runs([self.experiment_id], query, max_results=1000)
        )
        stale = [
            r
            for r in found
            if r.data.tags.get("mlflow.parentRunId") == parent and not owner_alive(r.data.tags)
        ]
        for run in stale:
            tags = run.data.tags
            node = f" (Ray node {tags[RAY_NODE_TAG]})" if tags.get(RAY_NODE_TAG) else ""
            self._mark_killed(
                run.info.run_id,
                f"process {tags[PID_TAG]} on {tags[HOST_TAG]}{node} ended without "
                f"closing this run (killed or crashed); marked KILLED by process {os.getpid()}",
            )
        return [r.info.run_id for r in stale]

    def supersede(self, parent: str, same_cell: Callable[[dict[str, str]], bool]) -> list[str]:
        """Tag the FINISHED jobs of this run's cell in the sweep ``parent`` as superseded by it.

        ``same_cell`` tells, from a job's params, whether it ran this cell. A cell runs again
        within its sweep after ``force=true`` or a changed plugin; the sweep's view of its
        results (``runs_view.children_filter``) then shows this run's row, not both. Returns
        the ids tagged, so the caller can say so.
        """
        query = f"tags.`{PARENT_TAG}` = '{parent}' and attributes.status = 'FINISHED'"
        found = retrying(
            lambda: self.client.search_runs([self.experiment_id], query, max_results=5000)
        )
        older = [
            r.info.run_id
            for r in found
            if r.info.run_id != self.run_id
            and SUPERSEDED_TAG not in r.data.tags
            and same_cell(r.data.params)
        ]
        for run_id in older:
            retrying(partial(self.client.set_tag, run_id, SUPERSEDED_TAG, self.run_id))
        return older

    def _mark_killed(self, run_id: str, why: str) -> None:
        marks = [RunTag(STALE_TAG, "owner process gone"), RunTag("failure", redacted(why))]
        retrying(lambda: self.client.log_batch(run_id, tags=marks))
        retrying(lambda: self.client.set_terminated(run_id, "KILLED"))

    def log_params(self, params: dict[str, Any]) -> dict[str, str]:
        """Params as short strings (long values are cut; config.yaml has them whole).

        Returns them as logged, as another run's params read back from MLflow compare.
        """
        items = [Param(k, redacted(str(v))[:_MAX_PARAM]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            retrying(partial(self.client.log_batch, self.run_id, params=items[i : i + 100]))
        return {p.key: p.value for p in items}

    def log_metrics(self, values: dict[str, float], step: int = 0) -> None:
        """Finite numbers only; NaN is skipped (the reason is in the run's notes)."""
        now = int(time.time() * 1000)
        items = [
            Metric(metric_name(k), float(v), now, step)
            for k, v in values.items()
            if v is not None and not math.isnan(float(v))
        ]
        for i in range(0, len(items), 500):
            retrying(partial(self.client.log_batch, self.run_id, metrics=items[i : i + 500]))

    def set_tags(self, tags: dict[str, str]) -> None:
        """Tags (git commit, fingerprint, failure reason, ...)."""
        items = [RunTag(k, redacted(str(v))) for k, v in tags.items()]
        retrying(lambda: self.client.log_batch(self.run_id, tags=items))

    def show_columns(self, metrics: list[str], params: list[str], sweep: str = "") -> None:
        """Show these metrics and params as columns of the runs-table views the links open.

        Columns are added to the experiment's view (``VIEW_TAG``: other runs' columns stay)
        and, for a job of the sweep whose parent is ``sweep``, to that sweep's view; this run
        gets a view of its own that selects it alone (``runner/tracking/runs_view.py`` says
        why one view per run).
        """
        tags = self.client.get_experiment(self.experiment_id).tags
        views = {VIEW_TAG: with_columns(tags.get(VIEW_TAG, "{}"), metrics, params)}
        if self.run_id:
            mine = view_state(metrics, params, run_filter(self.run_id))
            views[VIEW_PREFIX + run_view_key(self.run_id)] = mine
        if sweep:
            for key, finished_only in (
                (sweep_view_key(sweep), True),
                (sweep_all_view_key(sweep), False),
            ):
                tag = VIEW_PREFIX + key
                view = tags.get(tag) or sweep_view(sweep, [], [], finished_only=finished_only)
                views[tag] = with_columns(view, metrics, params)
        for tag, value in views.items():
            if value is not None:
                self._set_experiment_tag(tag, value)

    def show_sweep(
        self,
        parent_run_id: str,
        metrics: list[str],
        params: list[str],
        start: bool = False,
        swept: list[str] | None = None,
    ) -> None:
        """Set the views of the sweep whose parent is ``parent_run_id``: its jobs, these columns.

        Two views: its FINISHED jobs (the link it prints first) and every job. They replace
        what the jobs added (``show_columns``): the parent writes them at the start
        (``start``: the experiment's columns first, as no job has said its headline yet) and
        at the end, when it knows every job's headline. ``swept``: the swept keys, which lead.
        """
        like = ""
        if start:
            like = self.client.get_experiment(self.experiment_id).tags.get(VIEW_TAG, "")
        for key, finished_only in (
            (sweep_view_key(parent_run_id), True),
            (sweep_all_view_key(parent_run_id), False),
        ):
            view = sweep_view(parent_run_id, metrics, params, like, swept, finished_only)
            self._set_experiment_tag(VIEW_PREFIX + key, view)

    def _set_experiment_tag(self, key: str, value: str) -> None:
        retrying(lambda: self.client.set_experiment_tag(self.experiment_id, key, value))

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
        retrying(
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
        retrying(lambda: self.client.set_terminated(self.run_id, status))


def tracing_client(tracking_uri: str) -> Any:
    """MLflow's tracing client for this store (``runner/tracking/traces.py`` builds the traces)."""
    from mlflow.tracing.client import TracingClient

    return TracingClient(tracking_uri)


def start_trace(
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
) -> list[Any]:
    """Write one finished trace's info; its spans, built for ``log_spans``.

    ``rows`` are MLflow's span dicts; they are written as MLflow's own exporter does (the
    info, then the spans), retried while a shared sqlite file is locked.
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
    retrying(lambda: tracing.start_trace(info))
    return spans


def log_spans(tracing: Any, experiment_id: str, spans: list[Any]) -> None:
    """Write finished spans, of one trace or several, in one store call (one transaction)."""
    retrying(lambda: tracing.log_spans(experiment_id, spans))
