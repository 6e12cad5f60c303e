"""runner.tracking.reader against a store written here with MlflowClient.

Not by this project's writer, so a mistake shared by both sides cannot hide.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from runner.tracking.reader import (
    PARENT_TAG,
    RUN_COLUMNS,
    SCORE_COLUMNS,
    RunRecord,
    find_runs,
    finished_run,
    run_filter,
    runs_frame,
    scores_frame,
)

T0 = 1_700_000_000_000  # explicit start times (ms): runs made in one ms would tie otherwise
FA, FB, FC, FX, FY = "a" * 16, "b" * 16, "c" * 16, "0123456789abcdef", "fedcba9876543210"
MANY = 120  # more than one page at the page sizes used below


class Store:
    """A tracking store with known runs; ``ids`` maps the names used below to run ids."""

    def __init__(self, root: Path) -> None:
        self.uri = f"sqlite:///{root / 'mlflow.db'}"
        self.client = MlflowClient(tracking_uri=self.uri)
        self.ids: dict[str, str] = {}
        self.experiments: dict[str, str] = {}
        self.artifacts = (root / "artifacts").as_uri()

    def run(
        self,
        name: str,
        start: int,
        status: str | None,
        experiment: str = "summarization",
        tags: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        metrics: dict[str, float] | None = None,
        scores: dict[str, dict[str, float]] | None = None,
    ) -> str:
        if experiment not in self.experiments:
            location = f"{self.artifacts}/{experiment}"
            self.experiments[experiment] = self.client.create_experiment(
                experiment, artifact_location=location
            )
        run = self.client.create_run(
            self.experiments[experiment], start_time=T0 + start, tags=tags or {}, run_name=name
        )
        run_id = run.info.run_id
        if params or metrics:
            self.client.log_batch(
                run_id,
                params=[Param(k, v) for k, v in (params or {}).items()],
                metrics=[Metric(k, v, T0, 0) for k, v in (metrics or {}).items()],
            )
        if scores is not None:
            self.client.log_text(run_id, json.dumps(scores), "scores.json")
        if status is not None:
            self.client.set_terminated(run_id, status, end_time=T0 + start + 500)
        self.ids[name] = run_id
        return run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    s = Store(tmp_path_factory.mktemp("results"))
    parent = s.run("sweep", 0, "FINISHED")
    child = {"fingerprint": FA, PARENT_TAG: parent}
    s.run(
        "a",
        1000,
        "FINISHED",
        tags=child,
        params={"strategy": "hierarchical", "model": "fake", "model.temperature": "0.0"},
        metrics={"booookscore/score": 0.75, "calls": 7.0},
        scores={
            "d1": {"booookscore/score": 0.75, "strategy/calls": 3},
            "d2": {"booookscore/score": math.nan, "strategy/calls": 4},
        },
    )
    s.run("b", 2000, "FAILED", tags={**child, "failure": "DataError: empty"})
    s.run(
        "c",
        3000,
        "FINISHED",
        tags=child,
        params={"strategy": "incremental", "seed": "2"},
        scores={"d1": {"booookscore/score": 0.5, "strategy/calls": 5, "stats/words": 120}},
    )
    s.run("d", 4000, "KILLED", tags={"fingerprint": FA})
    s.run("e", 5000, None, tags={"fingerprint": FA})  # still RUNNING
    s.run("f", 6000, "FINISHED", tags={"fingerprint": FB}, params={"strategy": "x"})  # no scores
    s.run("g", 7000, "FAILED", tags={"fingerprint": FC})
    s.run("elsewhere", 9000, "FINISHED", experiment="other", tags={"fingerprint": FA})
    s.run("binned", 9500, "FINISHED", experiment="deleted", tags={"fingerprint": FA})
    s.client.delete_experiment(s.experiments["deleted"])
    for i in range(MANY):
        s.run(f"m{i}", i, None, experiment="many", tags={"fingerprint": FX if i % 2 else FY})
    return s


def names(store: Store, records: list[RunRecord]) -> list[str]:
    by_id = {v: k for k, v in store.ids.items()}
    return [by_id[r.run_id] for r in records]


def test_all_runs_newest_first(store: Store) -> None:
    found = find_runs(store.uri)
    assert names(store, found) == ["g", "f", "e", "d", "c", "b", "a", "sweep"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"fingerprint": FA}, ["e", "d", "c", "b", "a"]),
        ({"fingerprint": FB}, ["f"]),
        ({"fingerprint": "9" * 16}, []),
        ({"status": "FAILED"}, ["g", "b"]),
        ({"status": "killed"}, ["d"]),
        ({"status": "RUNNING"}, ["e"]),
        ({"status": "FINISHED"}, ["f", "c", "a", "sweep"]),
        ({"sweep": "PARENT"}, ["c", "b", "a"]),
        ({"sweep": "PARENT", "status": "FINISHED"}, ["c", "a"]),
        ({"sweep": "PARENT", "fingerprint": FB}, []),
        ({"fingerprint": FA, "status": "FINISHED"}, ["c", "a"]),
    ],
)
def test_filters(store: Store, filters: dict[str, str], expected: list[str]) -> None:
    if filters.get("sweep") == "PARENT":
        filters = {**filters, "sweep": store.ids["sweep"]}
    assert names(store, find_runs(store.uri, "summarization", **filters)) == expected


def test_filter_string_and_bad_values() -> None:
    assert run_filter() == ""
    assert run_filter(sweep="p1", fingerprint=FA, status="failed") == (
        f"tags.`mlflow.parentRunId` = 'p1' AND tags.fingerprint = '{FA}' "
        "AND attributes.status = 'FAILED'"
    )
    with pytest.raises(ValueError, match="unknown run status"):
        run_filter(status="DONE")
    with pytest.raises(ValueError, match="quotes"):
        run_filter(fingerprint="x' OR tags.fingerprint != '")


def test_record_fields(store: Store) -> None:
    a, e = (find_runs(store.uri, fingerprint=FA)[i] for i in (4, 0))
    assert a.run_id == store.ids["a"] and a.run_name == "a"
    assert a.experiment_id == store.experiments["summarization"]
    assert a.status == "FINISHED" and a.start_time == T0 + 1000 and a.end_time == T0 + 1500
    assert a.params == {"strategy": "hierarchical", "model": "fake", "model.temperature": "0.0"}
    assert a.metrics == {"booookscore/score": 0.75, "calls": 7.0}
    assert a.fingerprint == FA and a.parent_run_id == store.ids["sweep"]
    assert e.status == "RUNNING" and e.end_time is None and e.parent_run_id is None
    assert find_runs(store.uri, status="FINISHED")[-1].fingerprint is None  # the sweep parent
    assert len({a, e}) == 2  # hashable despite the dict fields


def test_finished_run_ignores_failed_killed_and_running(store: Store) -> None:
    # FA has newer KILLED and RUNNING runs, an older FAILED one, and a newer FINISHED run in
    # another experiment: none of those count.
    assert finished_run(store.uri, "summarization", FA) == store.ids["c"]
    assert finished_run(store.uri, "summarization", FB) == store.ids["f"]
    assert finished_run(store.uri, "summarization", FC) is None  # only FAILED
    assert finished_run(store.uri, "summarization", "9" * 16) is None
    assert finished_run(store.uri, "other", FA) == store.ids["elsewhere"]
    assert finished_run(store.uri, "no-such-experiment", FA) is None


@pytest.mark.parametrize("page_size", [7, 1000])
def test_more_runs_than_one_page(store: Store, page_size: int) -> None:
    found = find_runs(store.uri, "many", page_size=page_size)
    assert [r.run_name for r in found] == [f"m{i}" for i in reversed(range(MANY))]
    odd = find_runs(store.uri, "many", fingerprint=FX, page_size=page_size)
    assert [r.run_name for r in odd] == [f"m{i}" for i in reversed(range(1, MANY, 2))]


def test_missing_experiment_is_empty(store: Store) -> None:
    assert find_runs(store.uri, "no-such-experiment") == []
    assert find_runs(store.uri, "deleted") == []
    assert finished_run(store.uri, "deleted", FA) is None
    runs = runs_frame(store.uri, "no-such-experiment")
    assert runs.empty and list(runs.columns) == RUN_COLUMNS
    scores = scores_frame(store.uri, experiment="no-such-experiment")
    assert scores.empty and list(scores.columns) == SCORE_COLUMNS


def test_runs_frame(store: Store) -> None:
    frame = runs_frame(store.uri, fingerprint=FA, status="FINISHED")
    assert list(frame.columns) == RUN_COLUMNS + [
        "param.model",
        "param.model.temperature",
        "param.seed",
        "param.strategy",
        "metric.booookscore/score",
        "metric.calls",
    ]
    assert list(frame["run_name"]) == ["c", "a"]
    c, a = frame.to_dict("records")
    assert a["run_id"] == store.ids["a"] and a["status"] == "FINISHED"
    assert a["fingerprint"] == FA and a["parent_run_id"] == store.ids["sweep"]
    assert a["start_time"].value // 1_000_000 == T0 + 1000  # UTC timestamp, ns
    assert a["param.strategy"] == "hierarchical" and a["param.model.temperature"] == "0.0"
    assert a["metric.booookscore/score"] == 0.75 and a["metric.calls"] == 7.0
    assert c["param.seed"] == "2" and math.isnan(c["metric.calls"])  # c logged no metrics
    assert frame["metric.calls"].dtype == float


def test_runs_frame_running_run_has_no_end(store: Store) -> None:
    (row,) = runs_frame(store.uri, status="RUNNING").to_dict("records")
    assert row["run_name"] == "e" and pd.isna(row["end_time"]) and not pd.isna(row["start_time"])


def test_scores_frame(store: Store) -> None:
    frame = scores_frame(store.uri, fingerprint=FA)  # b, d, e have no scores.json
    assert list(frame.columns) == SCORE_COLUMNS + [
        "param.model",
        "param.model.temperature",
        "param.seed",
        "param.strategy",
        "booookscore/score",
        "stats/words",
        "strategy/calls",
    ]
    rows = frame.to_dict("records")
    assert [(r["run_name"], r["doc_id"]) for r in rows] == [("c", "d1"), ("a", "d1"), ("a", "d2")]
    c1, a1, a2 = rows
    assert c1["booookscore/score"] == 0.5 and c1["stats/words"] == 120.0
    assert c1["param.strategy"] == "incremental" and c1["run_id"] == store.ids["c"]
    assert a1["booookscore/score"] == 0.75 and a1["strategy/calls"] == 3.0
    assert math.isnan(a2["booookscore/score"]) and a2["strategy/calls"] == 4.0
    assert math.isnan(a1["stats/words"])  # a's documents have no such key
    assert a2["param.model"] == "fake" and a2["status"] == "FINISHED" and a2["fingerprint"] == FA
    assert all(frame[k].dtype == float for k in ("booookscore/score", "strategy/calls"))
    assert isinstance(c1["strategy/calls"], float)  # logged as the JSON int 5


def test_scores_frame_from_given_runs(store: Store) -> None:
    records = find_runs(store.uri, status="FINISHED")  # f and the parent have no scores.json
    frame = scores_frame(store.uri, records)
    assert list(frame["run_name"]) == ["c", "a", "a"]
    assert scores_frame(store.uri, [r for r in records if r.run_name == "f"]).empty
    assert scores_frame(store.uri, []).empty
