"""The one door to MLflow.

Uses ``MlflowClient`` with an explicit run id everywhere: never the fluent API's
process-global active run, because Hydra's basic launcher runs all jobs of a sweep in one
process and a leaked active run would swallow the next job.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

_MAX_PARAM = 500  # MLflow's limit is 6000 chars; short values keep the UI readable
_BAD_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_name(name: str) -> str:
    """A name MLflow accepts (alphanumerics, _ - . / and spaces)."""
    return _BAD_NAME.sub("_", name)


class Tracker:
    """One MLflow run: params, metrics, artifacts, and its final status."""

    def __init__(self, uri: str, experiment: str, artifact_root: Path | None = None) -> None:
        self.client = MlflowClient(tracking_uri=uri)
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

    def start(self, run_name: str, tags: dict[str, str]) -> str:
        """Create the run (status RUNNING) and return its id."""
        run = self.client.create_run(self.experiment_id, run_name=run_name, tags=tags)
        self.run_id = run.info.run_id
        return self.run_id

    def log_params(self, params: dict[str, Any]) -> None:
        """Params as short strings (long values are cut; config.yaml has them whole)."""
        items = [Param(k, str(v)[:_MAX_PARAM]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def log_metrics(self, values: dict[str, float], step: int = 0) -> None:
        """Finite numbers only; NaN is skipped (the reason is in the run's notes)."""
        now = int(time.time() * 1000)
        items = [
            Metric(metric_name(k), float(v), now, step)
            for k, v in values.items()
            if v is not None and not math.isnan(float(v))
        ]
        for i in range(0, len(items), 500):
            self.client.log_batch(self.run_id, metrics=items[i : i + 500])

    def set_tags(self, tags: dict[str, str]) -> None:
        """Tags (git commit, fingerprint, failure reason, ...)."""
        self.client.log_batch(self.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

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
        self.client.set_terminated(self.run_id, status)
