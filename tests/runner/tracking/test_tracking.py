from __future__ import annotations

import math
import threading
from pathlib import Path

from mlflow.tracking import MlflowClient

from runner.tracking.writer import Tracker, metric_name


def test_concurrent_jobs_share_one_experiment(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).search_experiments()  # create the schema once, as the first job would
    ids: list[str] = []
    errors: list[BaseException] = []

    def job(i: int) -> None:
        try:
            tracker = Tracker(uri, "concurrent", tmp_path / "artifacts")
            tracker.start(f"job-{i}", tags={})
            tracker.log_metrics({"score": float(i), "undecided": math.nan})
            tracker.finish("FINISHED")
            ids.append(tracker.experiment_id)
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(ids)) == 1
    runs = MlflowClient(uri).search_runs([ids[0]])
    assert len(runs) == 4 and all(r.info.status == "FINISHED" for r in runs)
    assert all("undecided" not in r.data.metrics for r in runs)  # NaN is not logged


def test_failed_run_keeps_its_reason(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker(uri, "e", tmp_path / "artifacts")
    tracker.start("x", tags={})
    tracker.finish("FAILED", reason="DataError: empty document")
    run = MlflowClient(uri).get_run(tracker.run_id)
    assert run.info.status == "FAILED" and run.data.tags["failure"] == "DataError: empty document"


def test_metric_names_are_sanitized() -> None:
    assert metric_name("doc/l'été: 1/score") == "doc/l__t__ 1/score"
