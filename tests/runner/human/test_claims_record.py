"""People's faithfulness judgments (``ClaimsJudgment``) as a human run and as HUMAN assessments.

A real job (``strategy=none data=summaries metrics=stats``) makes the judged run from a
small fixture of summaries; ``record_human_run`` then records judgments of some of them. The
expected values are computed here from the fixture's labels, and the assessments are read
back with MLflow's own client, never with the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.human.identity import content_identity, judgment_key
from runner.human.judgments import (
    ClaimLabel,
    ClaimsJudgment,
    HumanDataError,
    from_record,
    kind_of,
    to_record,
)
from runner.human.record import record_human_run
from runner.tracking.writer import Tracker

REPO = Path(__file__).resolve().parents[3]
METRIC = "myrater"
"""The metric the judgments name: assessment names must come from it, not a fixed name."""
SUMMARIES = {
    "st-1": "Mara finds a key under the mat.  She opens the red door.",
    "st-2": "Tom sails to the island. He meets his brother. He returns home.",
    "st-3": "Ivy plants a tree. It grows tall.",
}
"""The judged run's documents (doc_id -> summary), as the job will store them."""


def _claims(
    summary: str, labels: list[str], reasons: list[str] | None = None
) -> tuple[ClaimLabel, ...]:
    sentences = [s.strip() + "." for s in summary.split(".") if s.strip()]
    why = reasons or [""] * len(labels)
    return tuple(
        ClaimLabel(i, text, label, (f"quote {i}",) if label != "supported" else (), why[i])
        for i, (text, label) in enumerate(zip(sentences, labels, strict=True))
    )


# st-1 is given with other line breaks (matched after whitespace normalization); st-3 with
# another text (the run's summary of st-3 is another summary: not judged); st-9 is no
# document of the run.
ST1 = "Mara finds a key under the mat.\nShe opens the red door."
JUDGED = [
    ClaimsJudgment(
        "st-1",
        "gpt4",
        "ann-1",
        ST1,
        False,
        "hard",
        _claims(ST1, ["supported", "unsupported"], ["", "the door is blue"]),
        "sentence",
        METRIC,
    ),
    ClaimsJudgment(
        "st-2",
        "claude",
        "ann-1",
        SUMMARIES["st-2"],
        True,
        "",
        _claims(SUMMARIES["st-2"], ["supported", "partial", "supported"]),
        "claim",
        METRIC,
    ),
    ClaimsJudgment(
        "st-2",
        "claude",
        "ann-2",
        SUMMARIES["st-2"],
        False,
        "easy",
        _claims(SUMMARIES["st-2"], ["supported", "cannot_tell", "unsupported"]),
        "claim",
        METRIC,
    ),
    ClaimsJudgment("st-3", "gpt4", "ann-1", "Ivy plants a bush.", True, metric=METRIC),
    ClaimsJudgment("st-9", "gpt4", "ann-1", "Nobody ran this.", None, metric=METRIC),
]


@dataclass(frozen=True)
class Store:
    uri: str
    run_id: str
    """The judged run (the job's)."""


def run_job(folder: Path, summaries: dict[str, str]) -> str:
    """``python -m runner strategy=none data=summaries metrics=stats`` into ``folder``'s store."""
    data = folder / "summaries.json"
    data.write_text(json.dumps(summaries), encoding="utf-8")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    command = [
        sys.executable,
        "-m",
        "runner",
        "strategy=none",
        "data=summaries",
        f"data.path={data}",
        "metrics=stats",
        f"tracking.uri={uri}",
        f"cache.dir={folder / 'cache'}",
        f"hydra.run.dir={folder / 'hydra'}",
    ]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = MlflowClient(uri).search_runs(
        [MlflowClient(uri).get_experiment_by_name("summarization").experiment_id]
    )
    return str(run.info.run_id)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Store:
    folder = tmp_path_factory.mktemp("claims-record")
    run_id = run_job(folder, SUMMARIES)
    return Store(f"sqlite:///{folder / 'mlflow.db'}", run_id)


def _assessments(uri: str, run_id: str) -> dict[str, list[Any]]:
    """doc_id -> the HUMAN assessments on that document's trace of ``run_id``."""
    client = MlflowClient(uri)
    experiment = client.get_run(run_id).info.experiment_id
    traces = client.search_traces(
        locations=[experiment], filter_string=f"attributes.run_id = '{run_id}'"
    )
    return {
        t.info.tags["runner.document"]: [
            a for a in t.info.assessments if a.source.source_type == "HUMAN"
        ]
        for t in traces
    }


def _humans(uri: str) -> list[Any]:
    client = MlflowClient(uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(ids, "tags.`runner.kind` = 'human'")
    return list(runs)


def _share_supported(judgment: ClaimsJudgment) -> float:
    return [c.label for c in judgment.claims].count("supported") / len(judgment.claims)


def test_a_claims_judgment_survives_its_record_line() -> None:
    for judgment in JUDGED:
        line = json.loads(json.dumps(to_record(judgment)))
        assert line["kind"] == "claims" == kind_of(judgment)
        back = from_record(line)
        assert back == judgment
        assert isinstance(back, ClaimsJudgment)
        assert all(isinstance(c, ClaimLabel) and isinstance(c.evidence, tuple) for c in back.claims)


def test_identity_is_order_free_and_keys_tell_annotators_apart() -> None:
    assert content_identity(JUDGED) == content_identity(list(reversed(JUDGED)))
    assert content_identity(JUDGED) != content_identity(JUDGED[:-1])
    ann1, ann2 = JUDGED[1], JUDGED[2]  # the same summary, two annotators
    assert judgment_key(ann1) != judgment_key(ann2)
    relabelled = ClaimsJudgment(**{**ann1.__dict__, "faithful": False})
    assert judgment_key(relabelled) == judgment_key(ann1)  # one answer to one question


def test_judgments_become_a_human_run_and_assessments_on_the_judged_traces(
    judged: Store, tmp_path: Path
) -> None:
    human = record_human_run(judged.uri, None, JUDGED, tmp_path / "people.json")
    assert human.already is None and human.claims_judged == (judged.run_id,)
    client = MlflowClient(judged.uri)
    run = client.get_run(human.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["runner.kind"] == "human"
    assert "human.judged_run" not in run.data.tags  # st-3 and st-9 are not that run's

    # Values, from the fixture's labels: faithful is 1/0 (mean over annotators giving one),
    # supported the share labelled "supported" (partial and cannot_tell are not).
    st1, st2a, st2b = JUDGED[:3]
    expected = {
        "st-1": {"faithful": 0.0, "supported": 0.5, "claims": 2.0},
        "st-2": {
            "faithful": 0.5,
            "supported": (_share_supported(st2a) + _share_supported(st2b)) / 2,
            "claims": 3.0,
        },
        "st-3": {"faithful": 1.0},
        "st-9": {},
    }
    assert expected["st-2"]["supported"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    local = client.download_artifacts(human.run_id, "scores.json", str(tmp_path))
    scores = json.loads(Path(local).read_text(encoding="utf-8"))
    assert set(scores) == {"st-1", "st-2", "st-3"}  # st-9 has no value at all
    for doc, values in expected.items():
        got = {k.removeprefix(f"{METRIC}/"): v for k, v in scores.get(doc, {}).items()}
        assert got == pytest.approx(values), doc
    metrics = run.data.metrics
    assert metrics[f"{METRIC}/faithful"] == pytest.approx((0.0 + 0.5 + 1.0) / 3)
    assert metrics[f"{METRIC}/supported"] == pytest.approx(
        (0.5 + expected["st-2"]["supported"]) / 2
    )
    lines = client.download_artifacts(human.run_id, "human/judgments.jsonl", str(tmp_path))
    stored = Path(lines).read_text(encoding="utf-8").splitlines()
    assert [from_record(json.loads(line)) for line in stored] == JUDGED

    found = _assessments(judged.uri, judged.run_id)
    assert found["st-3"] == []  # another summary under the same doc_id: not judged
    first = found["st-1"]
    assert [(a.name, a.value) for a in first] == [
        (f"{METRIC}/faithful", False),
        (f"{METRIC}/claim", "supported"),
        (f"{METRIC}/claim", "unsupported"),
    ]
    assert {a.source.source_id for a in first} == {"ann-1"}
    assert first[0].rationale == "difficulty: hard"
    wrong = first[2]
    assert wrong.rationale == "the door is blue"
    assert wrong.metadata["claim"] == "She opens the red door."
    assert wrong.metadata["index"] == "1"
    assert json.loads(wrong.metadata["evidence"]) == ["quote 1"]
    assert wrong.metadata["human_run"] == human.run_id
    second = found["st-2"]
    assert sorted((a.source.source_id, a.value) for a in second if a.name.endswith("faithful")) == [
        ("ann-1", True),
        ("ann-2", False),
    ]
    assert sum(a.name == f"{METRIC}/claim" for a in second) == 6
    assert human.assessments == len(first) + len(second)

    again = record_human_run(judged.uri, None, list(reversed(JUDGED)), tmp_path / "copy.json")
    assert again.already is not None and again.run_id == human.run_id  # the same file twice


def test_one_run_judging_every_summary_lends_the_human_run_its_params(
    judged: Store, tmp_path: Path
) -> None:
    only = [
        ClaimsJudgment("st-3", "gpt4", "ann-7", SUMMARIES["st-3"], True, metric=METRIC),
    ]
    human = record_human_run(judged.uri, None, only, tmp_path / "one.json")
    run = MlflowClient(judged.uri).get_run(human.run_id)
    assert run.data.tags["human.judged_run"] == judged.run_id
    job = MlflowClient(judged.uri).get_run(judged.run_id).data.params
    assert run.data.params["strategy"] == job["strategy"] == "none"
    assert run.data.params["judge"] == "human"


def test_with_no_judged_run_the_human_run_is_still_recorded(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    human = record_human_run(uri, None, JUDGED[:2], tmp_path / "people.json")
    assert human.claims_judged == () and human.assessments == 0
    (run,) = _humans(uri)
    assert run.info.run_id == human.run_id and run.info.status == "FINISHED"
    assert run.data.metrics[f"{METRIC}/faithful"] == pytest.approx(0.5)


def test_a_summary_matching_two_documents_of_one_run_is_refused(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker(uri, "summarization", tmp_path / "artifacts")
    run_id = tracker.start("twins", {})
    tracker.log_json({"st-1": SUMMARIES["st-1"], "st-1b": SUMMARIES["st-1"]}, "summaries.json")
    tracker.finish("FINISHED")
    with pytest.raises(HumanDataError) as err:
        record_human_run(uri, None, JUDGED[:1], tmp_path / "people.json")
    message = str(err.value)
    assert "\n" not in message
    assert "'st-1'" in message and "'st-1b'" in message and run_id in message
    assert _humans(uri) == []


def test_a_claim_label_outside_the_four_is_one_line_and_nothing_is_recorded(
    tmp_path: Path,
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    bad = ClaimsJudgment(
        "st-2", "claude", "ann-1", SUMMARIES["st-2"], claims=(ClaimLabel(0, "Tom sails.", "Yes"),)
    )
    with pytest.raises(HumanDataError) as err:
        record_human_run(uri, None, [JUDGED[0], bad], tmp_path / "people.json")
    message = str(err.value)
    assert "\n" not in message and "'Yes'" in message and "st-2" in message
    assert "supported, partial, unsupported, cannot_tell" in message
    assert _humans(uri) == []


def test_a_run_the_judgments_name_is_judged_in_its_own_experiment(tmp_path: Path) -> None:
    """A Label Studio task key names the run: it is searched wherever it is, and lends the
    human run its experiment (it has no traces here, so its document is listed untraced)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker(uri, "elsewhere", tmp_path / "artifacts")
    run_id = tracker.start("labelled", {})
    tracker.log_json({"st-2": SUMMARIES["st-2"]}, "summaries.json")
    tracker.finish("FINISHED")
    judgment = ClaimsJudgment(
        "st-2", run_id, "7", SUMMARIES["st-2"], True, claims=JUDGED[1].claims, metric=METRIC
    )
    human = record_human_run(uri, None, [judgment], tmp_path / "export.json")
    assert human.claims_judged == (run_id,)
    assert human.untraced == (f"{run_id}/st-2",) and human.assessments == 0
    client = MlflowClient(uri)
    run = client.get_run(human.run_id)
    assert client.get_experiment(run.info.experiment_id).name == "elsewhere"
    assert run.data.tags["human.judged_run"] == run_id


def _judged_in(uri: str, experiment: str, root: Path) -> str:
    tracker = Tracker(uri, experiment, root)
    run_id = tracker.start(f"judged in {experiment}", {})
    tracker.log_json({"st-1": SUMMARIES["st-1"]}, "summaries.json")
    tracker.finish("FINISHED")
    return run_id


def test_labels_naming_no_run_land_in_the_experiment_whose_runs_judged_them(
    tmp_path: Path,
) -> None:
    """A release file names no run: its judged runs are searched in every experiment (a preset
    logs to its own), and the human run is recorded beside them."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    Tracker(uri, "summarization", tmp_path / "artifacts")  # the default experiment exists
    run_id = _judged_in(uri, "storysumm_raters", tmp_path / "artifacts")
    human = record_human_run(uri, None, JUDGED[:1], tmp_path / "people.json")
    assert human.claims_judged == (run_id,)
    client = MlflowClient(uri)
    run = client.get_run(human.run_id)
    assert client.get_experiment(run.info.experiment_id).name == "storysumm_raters"


def test_judged_runs_in_two_experiments_ask_for_one(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for name in ("first", "second"):
        _judged_in(uri, name, tmp_path / "artifacts")
    with pytest.raises(HumanDataError) as err:
        record_human_run(uri, None, JUDGED[:1], tmp_path / "people.json")
    message = str(err.value)
    assert "\n" not in message and "first, second" in message and "--experiment" in message
    assert _humans(uri) == []
