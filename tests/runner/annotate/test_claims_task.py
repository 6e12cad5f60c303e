"""The ``claims`` task kind: a judged run's claims out to Label Studio, people's labels back in.

Export reads the run's ``claims.json`` (or the claims its data gives) and its sources (its
data read again); the tasks are blind and the key maps them back. Import reads a Label
Studio export written here by hand, in Label Studio's format, into ``ClaimsJudgment``s whose
every field is known from the hand-written answers; bad answers are one line each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from metrics.faithfulness import tasks as claims_module
from runner.annotate.__main__ import main
from runner.annotate.configs import labeling_config
from runner.api.human_format import ClaimLabel, ClaimsJudgment
from runner.api.types import Document, WorkItem
from runner.human.judgments import HumanDataError
from runner.human.labelstudio import read_labelstudio
from runner.human.task_kinds import kinds, task_kind
from runner.tracking.reader import find_runs
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.plugins import register
from tests.runner.annotate.claims_runs import CLAIMS, SOURCES, SUMMARIES, data_files, log_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store with a run that judged claims and one that did not; the data they read."""
    root = tmp_path_factory.mktemp("claims-store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    data = data_files(root)
    judged = log_run(uri, root, data, SUMMARIES, CLAIMS)
    plain = log_run(uri, root, data, SUMMARIES, None)
    return {"uri": uri, "judged": judged, "plain": plain, "data": data, "root": root}


def export(tmp_path: Path, uri: str, *args: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out = tmp_path / "out"
    assert main(["export", "claims", *args, "--out", str(out), "--tracking-uri", uri]) == 0
    tasks = json.loads((out / "tasks.json").read_text())
    return tasks, json.loads((out / "key.json").read_text())


def test_tasks_hold_the_source_the_summary_and_the_runs_claims_in_order(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    tasks, key = export(tmp_path, runs["uri"], runs["judged"], "--seed", "4")
    text = (tmp_path / "out" / "tasks.json").read_text()
    assert runs["judged"] not in text and not re.search(r"[0-9a-f]{32}", text)
    assert key["kind"] == "claims" and key["seed"] == 4 and len(tasks) == 2
    for task in tasks:
        data = task["data"]
        assert set(data) == {"uid", "book", "source_text", "summary", "claims"}
        doc = data["book"]
        assert key["tasks"][data["uid"]] == {"doc_id": doc, "system": runs["judged"]}
        assert data["source_text"] == SOURCES[doc] and data["summary"] == SUMMARIES[doc]
        assert [c["text"] for c in data["claims"]] == list(CLAIMS[doc])  # index order
    config = (tmp_path / "out" / "labeling-claims.xml").read_text()
    assert '<Repeater on="$claims" indexFlag="{{idx}}">' in config


STORY = "The keeper lit the lantern at dusk. A fox watched from the dunes. The ship came home."
ENTRIES = {
    "s1": ["The keeper lit a lantern.", "The lantern burned all night."],
    "s2": ["The lantern was lit.", "The ship sank."],
}
"""A StorySumm-shaped release: summary id -> its sentences (also its claims)."""


def _release(path: Path) -> None:
    entry = {"story": STORY, "label": 1, "difficulty": "", "explanations": [], "model": "gpt-4"}
    entry |= {"split": "val", "story-id": "1"}
    entries = {
        key: {**entry, "summary": claims, "errors": [1] * len(claims), "claims": claims}
        for key, claims in ENTRIES.items()
    }
    path.write_text(json.dumps(entries), encoding="utf-8")


def test_a_real_claims_judging_job_is_exported_with_its_claims_and_story(tmp_path: Path) -> None:
    """A job (strategy=none data=storysumm metrics=faithfulness method=claims, a loopback judge)
    writes claims.json and config.yaml as the job does; export reads both."""
    from tests.runner.test_app import overrides, run

    release = tmp_path / "storysumm.json"
    _release(release)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    stores = {"tracking.uri": uri, "cache.dir": str(tmp_path / "cache")}
    with FakeOpenAIServer(lambda request: "True") as server:
        common = [o for o in overrides(server.url, stores) if not o.startswith("metrics=")]
        result = run([
            *common, "strategy=none", "data=storysumm", f"data.path={release}",
            "metrics=faithfulness", "metrics.faithfulness.method=claims",
            "judge=openai_compatible", f"judge.api_base={server.url}",
        ])  # fmt: skip
    tasks, key = export(tmp_path, uri, result.run_id, "--seed", "9")
    assert sorted(t["data"]["book"] for t in tasks) == sorted(ENTRIES)
    for task in tasks:
        data = task["data"]
        assert key["tasks"][data["uid"]] == {"doc_id": data["book"], "system": result.run_id}
        assert data["source_text"] == STORY
        assert data["summary"] == " ".join(ENTRIES[data["book"]])
        assert [c["text"] for c in data["claims"]] == ENTRIES[data["book"]]


def _given_loader(summaries: dict[str, str], claims: dict[str, tuple[str, ...]]) -> ModuleType:
    """A data loader whose items carry given claims (``extras``), as StorySumm's does."""
    module = ModuleType("given_claims_data")
    module.KEYS = ("path",)  # type: ignore[attr-defined]

    def load(*, path: str | None) -> list[WorkItem]:
        return [
            WorkItem(doc, Document(doc, SOURCES[doc]), text, {"claims": claims[doc]})
            for doc, text in summaries.items()
        ]

    module.load = load  # type: ignore[attr-defined]
    return module


def test_a_run_without_claims_json_takes_its_datas_claims_for_the_datas_summaries(
    runs: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    given: dict[str, tuple[str, ...]] = {"story-1": ("Given claim one.", "Given claim two.")}
    given["story-2"] = ("Not this one.",)
    data_summaries = {"story-1": SUMMARIES["story-1"], "story-2": "Another summary altogether."}
    register(monkeypatch, "data", "given_claims", _given_loader(data_summaries, given))
    data = {"source": "given_claims", "path": "unused", "limit": None}
    run = log_run(runs["uri"], runs["root"], data, SUMMARIES, None)
    tasks, key = export(tmp_path, runs["uri"], run, "--seed", "1")
    shown = capsys.readouterr().out
    assert [t["data"]["book"] for t in tasks] == ["story-1"]
    assert [c["text"] for c in tasks[0]["data"]["claims"]] == list(given["story-1"])
    assert "left out story-2" in shown  # its summary is not the data's: no given claims
    assert tasks[0]["data"]["source_text"] == SOURCES["story-1"]


def test_a_run_with_no_claims_at_all_is_one_line_and_exit_2(
    runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(
        ["export", "claims", runs["plain"], "--out", str(out), "--tracking-uri", runs["uri"]]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"run {runs['plain']} has no claims" in err and "method=claims" in err
    assert not (out / "key.json").exists()


def test_a_named_system_file_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "s.json"
    file.write_text(json.dumps(SUMMARIES))
    code = main(["export", "claims", "--system", f"x={file}", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "give run ids" in err and len(err.strip().splitlines()) == 1


def test_a_long_or_unreadable_source_is_a_note_in_its_place(
    runs: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    shortest = min(len(t) for t in SOURCES.values())
    monkeypatch.setattr(claims_module, "SOURCE_LIMIT", shortest - 1)
    tasks, _ = export(tmp_path / "long", runs["uri"], runs["judged"], "--seed", "1")
    for task in tasks:
        words = len(SOURCES[task["data"]["book"]].split())
        assert task["data"]["source_text"].startswith(f"(The source, {words} words, is too long")
    monkeypatch.undo()
    moved = {**runs["data"], "sources": str(tmp_path / "gone")}
    run = log_run(runs["uri"], runs["root"], moved, SUMMARIES, CLAIMS)
    tasks, _ = export(tmp_path / "gone", runs["uri"], run, "--seed", "1")
    assert "sources not shown" in capsys.readouterr().out
    assert all(
        t["data"]["source_text"].startswith("(The source is not available here") for t in tasks
    )
    assert all(len(t["data"]["claims"]) == len(CLAIMS[t["data"]["book"]]) for t in tasks)


# --- reading an export back -------------------------------------------------------------

KEY = {"kind": "claims", "seed": 0, "tasks": {"t1": {"doc_id": "story-1", "system": "run-a"}}}


def _choice(name: str, to: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": to, "type": "choices", "value": {"choices": [value]}}


def _evidence(index: int, rid: str, part: str) -> dict[str, Any]:
    start = SOURCES["story-1"].index(part)
    value = {"start": start, "end": start + len(part), "text": part}
    value["labels"] = [f"evidence for claim {index}"]
    return {"id": rid, "from_name": f"evidence_{index}", "to_name": "source_text",
            "type": "labels", "value": value}  # fmt: skip


def _reason(index: int, text: str) -> dict[str, Any]:
    return {"from_name": f"reason_{index}", "to_name": f"claim_{index}", "type": "textarea",
            "value": {"text": [text]}}  # fmt: skip


def _answers() -> list[dict[str, Any]]:
    """Claim 0 supported by two passages (marked last first), 1 partial, 2 cannot tell."""
    return [
        _choice("faithful", "summary", "No"),
        _choice("label_0", "claim_0", "Supported"),
        _evidence(0, "e2", "One spring she left for the city."),
        _evidence(0, "e1", "Ann grew up on a farm."),
        _reason(0, "She grew up there and left."),
        _choice("label_1", "claim_1", "Partially supported"),
        _choice("label_2", "claim_2", "Cannot tell"),
        _reason(2, "Only 'later'."),
    ]


def _write(tmp_path: Path, result: list[dict[str, Any]], who: Any = 7) -> Path:
    data: dict[str, Any] = {"uid": "t1", "book": "story-1", "source_text": SOURCES["story-1"]}
    data |= {"summary": SUMMARIES["story-1"], "claims": [{"text": c} for c in CLAIMS["story-1"]]}
    exported = [{"id": 3, "data": data, "annotations": [{"completed_by": who, "result": result}]}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(exported))
    return path


def test_an_export_reads_back_as_one_claims_judgment(tmp_path: Path) -> None:
    judgments, unmatched = read_labelstudio(_write(tmp_path, _answers()), KEY)
    one, two, three = CLAIMS["story-1"]
    expected = ClaimsJudgment(
        "story-1", "run-a", "7", SUMMARIES["story-1"], faithful=False,
        claims=(
            ClaimLabel(0, one, "supported",
                       ("Ann grew up on a farm.", "One spring she left for the city."),
                       "She grew up there and left."),
            ClaimLabel(1, two, "partial"),
            ClaimLabel(2, three, "cannot_tell", (), "Only 'later'."),
        ),
        unit="claim",
    )  # fmt: skip
    assert judgments == [expected] and unmatched == []


def test_the_summary_question_skipped_is_none_and_not_supported_maps(tmp_path: Path) -> None:
    result = [_choice(f"label_{i}", f"claim_{i}", "Not supported") for i in range(3)]
    (judgment,) = read_labelstudio(_write(tmp_path, result), KEY, kind="claims")[0]
    assert isinstance(judgment, ClaimsJudgment) and judgment.faithful is None
    assert [c.label for c in judgment.claims] == ["unsupported"] * 3


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda r: [*r[:1], _choice("verdict_0", "claim_0", "Supported"), *r[2:]],
         "from_name", "unknown control 'verdict_0'"),
        (lambda r: [*r, _choice("label_3", "claim_3", "Supported")], "label_3",
         "claim 3 is not one of the task's 3 claims"),
        (lambda r: [*r[:1], _choice("label_0", "claim_0", "Mostly"), *r[2:]], "label_0",
         "unknown choice ['Mostly']"),
        (lambda r: [x for x in r if x["from_name"] != "label_1"], "label_1", "no choice made"),
        (lambda r: [*r, {**_evidence(1, "e9", "Ann"), "value": {"start": 0, "end": 3,
                         "text": "Bob", "labels": ["x"]}}], "evidence_1", "is not in the source"),
        (lambda r: [*r[:2], {**r[2], "value": {"start": 0, "end": 3}}], "value.labels",
         "missing in control 'evidence_0'"),
    ],
)  # fmt: skip
def test_bad_answers_are_one_line_naming_the_task_and_field(
    change: Any, field: str, words: str, tmp_path: Path
) -> None:
    with pytest.raises(HumanDataError) as raised:
        read_labelstudio(_write(tmp_path, change(_answers())), KEY)
    message = str(raised.value)
    assert "task 3 (book 'story-1')" in message and f"field {field!r}" in message
    assert words in message and "\n" not in message


def test_the_config_names_exactly_the_controls_the_reader_knows() -> None:
    config = labeling_config("claims")
    names = set(re.findall(r'<(?:Choices|Labels|TextArea) name="([^"]+)"', config))
    assert names == set(task_kind("claims").task.controls)
    choices = re.findall(r'<Choice value="([^"]+)"/>', config)
    assert choices == ["Yes", "No", "Supported", "Partially supported", "Not supported",
                       "Cannot tell"]  # fmt: skip
    assert kinds()[-1] == "claims" and task_kind("claims").metric == "faithfulness"


def test_the_cli_import_records_the_annotation_as_a_human_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The judged run's own summary, labelled: faithful No (0.0), one of three claims supported."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    judged = log_run(uri, tmp_path, data_files(tmp_path), SUMMARIES, CLAIMS)
    key = {"kind": "claims", "seed": 0, "tasks": {"t1": {"doc_id": "story-1", "system": judged}}}
    (tmp_path / "key.json").write_text(json.dumps(key))
    export_file = _write(tmp_path, _answers())
    code = main(["import", str(export_file), "--key", str(tmp_path / "key.json"),
                 "--tracking-uri", uri])  # fmt: skip
    shown, err = capsys.readouterr()
    assert code == 0, err
    assert "1 judgments read" in shown and "claims: 1 (annotator 7: 1)" in shown
    (human,) = [r for r in find_runs(uri, "summarization") if r.tags.get("runner.kind") == "human"]
    assert human.metrics["faithfulness/faithful"] == 0.0
    assert human.metrics["faithfulness/supported"] == pytest.approx(1 / 3)
    assert human.metrics["faithfulness/claims"] == 3.0


UI_EXPORT = Path(__file__).parent / "fixtures" / "claims-ui-export.json"
"""A claims task answered in Label Studio 1.23.2's own labeling page (headless Chromium driven
through the DevTools protocol: the boxes clicked, the evidence dragged over the source, the
reason typed, Submit), then exported as JSON: what the ``Repeater``'s controls really write."""


def test_an_answer_made_in_label_studios_labeling_page_reads_back() -> None:
    key = {"kind": "claims", "seed": 0, "tasks": {"t1": {"doc_id": "story-1", "system": "run-a"}}}
    (judgment,), unmatched = read_labelstudio(UI_EXPORT, key)
    one, two, three = CLAIMS["story-1"]
    assert unmatched == [] and judgment == ClaimsJudgment(
        "story-1", "run-a", "1", SUMMARIES["story-1"], faithful=False,
        claims=(
            ClaimLabel(0, one, "supported", ("One spring she left for the city.",),
                       "She left in spring."),
            ClaimLabel(1, two, "partial"),
            ClaimLabel(2, three, "cannot_tell"),
        ),
    )  # fmt: skip
