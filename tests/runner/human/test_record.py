"""record_human_run without a judged run's traces: named systems, several systems, bad ids.

The end-to-end path (a real job's traces, read back through ``mlflow server``) is in
tests/runner/tracking/test_assessments.py; these cases need only a store.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.human.judgments import CoherenceAnnotation, HumanDataError, Preference, Relation, Span
from runner.human.record import record_human_run
from runner.tracking.assessments import ERROR_TAG, LLM_JUDGE, Feedback, log_verdicts
from runner.tracking.writer import Tracker

SUMMARY = "Anna leaves home. She finds work in the mill. Her mother writes. She goes home."
"""Four sentences."""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('record') / 'mlflow.db'}"


def _annotation(system: str, doc: str = "anna", annotator: str = "a1", spans: int = 1) -> Any:
    singles = tuple(
        Span("She finds work in the mill.", "Which mill?", ("salience",)) for _ in range(spans)
    )
    return CoherenceAnnotation(doc, system, annotator, SUMMARY, singles=singles)


def _run(store: str, run_id: str) -> Any:
    return MlflowClient(store).get_run(run_id)


def _json_artifact(store: str, run_id: str, path: str, tmp_path: Path) -> Any:
    local = MlflowClient(store).download_artifacts(run_id, path, str(tmp_path))
    return json.loads(Path(local).read_text(encoding="utf-8"))


def test_a_named_system_gets_a_human_run_and_no_assessments(store: str, tmp_path: Path) -> None:
    pair = Relation(Span("Anna leaves home."), Span("She goes home."), "Why?", ("discontinuity",))
    judged = [
        _annotation("hier"),
        CoherenceAnnotation("anna", "hier", "a2", SUMMARY, relations=(pair,)),
        _annotation("hier", doc="ben", spans=0),
    ]
    human = record_human_run(store, None, judged, tmp_path / "people.json")
    assert human.assessments == 0 and human.untraced == ()
    run = _run(store, human.run_id)
    assert run.info.status == "FINISHED"
    assert MlflowClient(store).get_experiment(run.info.experiment_id).name == "summarization"
    tags = run.data.tags
    assert tags["runner.kind"] == "human" and "human.judged_run" not in tags
    assert tags["human.annotators"] == "a1,a2" and tags["human.kinds"] == "coherence"
    assert run.data.params == {"judge": "human", "judge.model": "human"}
    scores = _json_artifact(store, human.run_id, "scores.json", tmp_path)
    assert set(scores) == {"anna", "ben"}
    assert scores["anna"]["booookscore/score"] == pytest.approx(75.0)  # one of four, each
    assert scores["anna"]["booookscore/type/salience"] == pytest.approx(12.5)  # a1 only
    assert scores["ben"]["booookscore/score"] == pytest.approx(100.0)
    assert run.data.metrics["booookscore/score"] == pytest.approx((75.0 + 100.0) / 2)


def test_several_systems_key_their_summaries_and_copy_no_run(store: str, tmp_path: Path) -> None:
    judged = [_annotation("hier", spans=2), _annotation("inc", spans=0)]
    human = record_human_run(store, "people", judged, tmp_path / "two.json")
    scores = _json_artifact(store, human.run_id, "scores.json", tmp_path)
    assert {k: v["booookscore/score"] for k, v in scores.items()} == {
        "hier/anna": pytest.approx(50.0),
        "inc/anna": pytest.approx(100.0),
    }
    run = _run(store, human.run_id)
    assert MlflowClient(store).get_experiment(run.info.experiment_id).name == "people"


def test_a_run_and_a_named_system_are_not_one_judged_run(store: str, tmp_path: Path) -> None:
    tracker = Tracker(store, "summarization")
    run_id = tracker.start("judged", {})
    tracker.log_params({"strategy": "hier", "chunk": 2048})
    tracker.finish("FINISHED")
    choice = {"preference": "hier"}
    judged = [_annotation(run_id), Preference("anna", (run_id, "hier"), "a1", choice)]
    human = record_human_run(store, None, judged, tmp_path / "mixed.json")
    run = _run(store, human.run_id)
    assert "human.judged_run" not in run.data.tags and "strategy" not in run.data.params
    assert human.untraced == (f"{run_id}/anna",)  # the judged run logged no trace


def test_an_unknown_run_id_is_one_line_and_writes_nothing(store: str, tmp_path: Path) -> None:
    before = len(MlflowClient(store).search_runs(_experiments(store)))
    missing = "0123456789abcdef0123456789abcdef"
    with pytest.raises(HumanDataError, match=f"judged run {missing} is not in the store"):
        record_human_run(store, None, [_annotation(missing)], tmp_path / "bad.json")
    assert len(MlflowClient(store).search_runs(_experiments(store))) == before


def test_an_empty_summary_is_refused_before_any_run(store: str, tmp_path: Path) -> None:
    before = len(MlflowClient(store).search_runs(_experiments(store)))
    empty = CoherenceAnnotation("anna", "hier", "a1", "")
    with pytest.raises(HumanDataError, match="no sentence to score"):
        record_human_run(store, None, [empty], tmp_path / "empty.json")
    assert len(MlflowClient(store).search_runs(_experiments(store))) == before


def test_the_judges_verdicts_never_fail_a_run(store: str, caplog: pytest.LogCaptureFixture) -> None:
    tracker = Tracker(store, "summarization")
    run_id = tracker.start("no traces", {})
    said = {"sentence": "A sentence."}
    flagged = Feedback("d", "coherence_error", "entity omission", LLM_JUDGE, "judge", "Who?", said)
    feedback = [flagged, Feedback("d", "booookscore", 0.0, LLM_JUDGE, "judge")]
    assert log_verdicts(tracker.client, run_id, feedback) == 0  # no trace
    with caplog.at_level(logging.WARNING):
        assert log_verdicts(tracker.client, "f" * 32, feedback) == 0
    assert "were not logged" in caplog.text
    assert ERROR_TAG not in _run(store, run_id).data.tags


def _experiments(store: str) -> list[str]:
    return [e.experiment_id for e in MlflowClient(store).search_experiments()]


def test_a_human_run_sits_beside_the_run_it_judged_in_the_report(tmp_path: Path) -> None:
    """Two judged runs over different folders, people's annotations of one of them: the human
    run repeats that run's params (data.path included), so its row is that folder's, not a
    row of its own."""
    from runner.report.config import ReportConfig
    from runner.report.make import make_report

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    summary = "Anna meets Vronsky. She leaves. The end."
    ids = {}
    for folder in ("/books/a", "/books/b"):
        tracker = Tracker(uri, "aligned")
        ids[folder] = tracker.start(folder, {})
        tracker.log_params(
            {
                "strategy": "hier",
                "data": "dir",
                "data.path": folder,
                "judge": "gpt4",
                "judge.model": "openai/gpt-4",
                "metrics": "booookscore",
            }
        )
        tracker.log_json({"anna": summary}, "summaries.json")
        tracker.log_json({"anna": {"booookscore/score": 100.0}}, "scores.json")
        tracker.log_metrics({"booookscore/score": 100.0})
        tracker.finish("FINISHED")
    judged = ids["/books/a"]
    annotation = CoherenceAnnotation("anna", judged, "a1", summary, singles=(Span("She leaves."),))
    record_human_run(uri, "aligned", [annotation], "people.json")
    report = make_report(
        ReportConfig(uri=uri, experiment="aligned", out=tmp_path / "out", resamples=50)
    )
    assert report.table is not None
    layout = report.table.layout
    keys = [*layout.rows, *layout.columns]
    assert sorted(keys) == ["data.path", "judge"], keys
    cells = {dict(zip(keys, (*r, *c), strict=True))["data.path"] for r, c, _ in report.table.cells}
    assert cells == {"/books/a", "/books/b"}  # no row for a human run without a folder
