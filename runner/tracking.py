"""The one door to MLflow.

Uses ``MlflowClient`` with an explicit run id everywhere: never the fluent API's
process-global active run, because Hydra's basic launcher runs all jobs of a sweep in one
process and a leaked active run would swallow the next job.

Several jobs may write one sqlite store at once (the joblib launcher): sqlite serializes
writers and answers "database is locked" when a writer waits too long, so every write is
retried with backoff (``_retrying``). For many machines, point ``tracking.uri`` at one
``mlflow server`` instead, which is then the single writer.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import random
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

_MAX_PARAM = 500  # MLflow's limit is 6000 chars; short values keep the UI readable
T = TypeVar("T")


def artifact_root(uri: str) -> Path | None:
    """Artifacts beside a sqlite store, in <store folder>/artifacts/; None = MLflow's default."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///") :]).parent / "artifacts"
    return None


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """Serialize a new sqlite store's creation across processes: MLflow creates and migrates
    the schema on first access, and two processes doing it at once corrupt it."""
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


def _retrying(call: Callable[[], T], attempts: int = 8) -> T:
    """``call()``, again after a short random wait while sqlite says the database is locked."""
    for attempt in range(attempts):
        try:
            return call()
        except Exception as err:  # MlflowException or sqlalchemy's OperationalError
            if "database is locked" not in str(err) or attempt == attempts - 1:
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
        self.client = MlflowClient(tracking_uri=uri)
        with _store_lock(uri):  # the first access creates and migrates a new sqlite store
            self.experiment_id = self._experiment(experiment, artifact_root)
        self.run_id = ""

    def _experiment(self, name: str, artifact_root: Path | None) -> str:
        """Get or create, safely when several jobs start at once."""
        for _ in range(5):
            found = self.client.get_experiment_by_name(name)
            if found is not None:
                return str(found.experiment_id)
            try:
                location = (artifact_root / name).as_uri() if artifact_root else None
                return str(self.client.create_experiment(name, artifact_location=location))
            except MlflowException:
                time.sleep(0.2)  # another job created it first (unique constraint): look again
        raise RuntimeError(f"could not create or find MLflow experiment {name!r}")

    @classmethod
    def for_run(cls, uri: str, run_id: str) -> Tracker:
        """A tracker bound to an existing run (e.g. a sweep's parent, from another process)."""
        tracker = cls.__new__(cls)
        tracker.client = MlflowClient(tracking_uri=uri)
        tracker.run_id = run_id
        tracker.experiment_id = tracker.client.get_run(run_id).info.experiment_id
        return tracker

    def start(self, run_name: str, tags: dict[str, str]) -> str:
        """Create the run (status RUNNING) and return its id."""
        run = _retrying(lambda: self.client.create_run(self.experiment_id, run_name=run_name, tags=tags))
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

    def log_table(self, columns: dict[str, list[Any]], artifact_file: str) -> None:
        """A table artifact (MLflow's table format: the UI shows it as a table)."""
        self.client.log_table(self.run_id, columns, artifact_file)

    def log_dataset(self, name: str, digest: str, source: str, rows: int) -> None:
        """The run's input documents, shown in the UI's Dataset column."""
        from mlflow.entities import Dataset, DatasetInput, InputTag

        dataset = Dataset(name=name, digest=digest, source_type="local", source=json.dumps({"uri": source}),
                          profile=json.dumps({"num_rows": rows}))
        tags = [InputTag("mlflow.data.context", "summarize")]
        _retrying(lambda: self.client.log_inputs(self.run_id, datasets=[DatasetInput(dataset, tags)]))

    def log_json(self, obj: Any, artifact_file: str) -> None:
        """A JSON artifact."""
        self.client.log_text(self.run_id, json.dumps(obj, indent=2, ensure_ascii=False), artifact_file)

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
