"""``python -m runner.annotate import FILE``: a metric's people's-judgment file, found by shape.

A small metric of this test declares ``HUMAN_FILES`` (a "Tiny release" format); it is found
through the registry as an installed plugin would be, and no core module knows it. A real job
makes the judged run; the import records a human run and HUMAN assessments on that run's
traces under the metric's name. Under CI the real StorySumm release is imported into a fresh
store and checked against the raw file.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.annotate.__main__ import main
from runner.api.human_format import HumanFile
from runner.human.claim_files import claim_formats
from runner.human.judgments import ClaimLabel, ClaimsJudgment, from_record
from tests.conftest import SHARED_DATA, missing_shared
from tests.helpers.plugins import register
from tests.runner.annotate.claims_runs import logged_run
from tests.runner.human.test_claims_record import run_job

SUMMARIES = {
    "t-1": "Ada builds an engine. It runs on steam.",
    "t-2": "Ben draws a map. The map shows a river. He gets lost.",
}
RELEASE = {
    "tiny_release": [
        {"id": "t-1", "model": "m1", "summary": SUMMARIES["t-1"], "ok": True, "wrong": []},
        {"id": "t-2", "model": "m2", "summary": SUMMARIES["t-2"], "ok": False, "wrong": [2]},
        {"id": "t-3", "model": "m1", "summary": "", "ok": True, "wrong": []},
    ]
}
"""The tiny format: per summary its label and the indexes of its unsupported sentences; an
entry without a summary is skipped with a note."""


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in text.split(".") if s.strip()]


def _recognizes(path: Path) -> bool:
    try:
        return "tiny_release" in json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, TypeError, UnicodeDecodeError):
        return False


def _read(path: Path) -> tuple[list[ClaimsJudgment], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))["tiny_release"]
    out, notes = [], []
    for entry in data:
        if not entry["summary"]:
            notes.append(f"tiny {entry['id']}: no summary; skipped")
            continue
        claims = tuple(
            ClaimLabel(
                i, s, entry.get("label", "unsupported" if i in entry["wrong"] else "supported")
            )
            for i, s in enumerate(_sentences(entry["summary"]))
        )
        out.append(
            ClaimsJudgment(
                entry["id"], entry["model"], "tiny", entry["summary"], entry["ok"], claims=claims
            )
        )
    return out, notes


def _metric_module(name: str, *files: HumanFile) -> types.ModuleType:
    module = types.ModuleType(name)
    module.ROLES = ()  # type: ignore[attr-defined]
    module.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    module.setup = lambda: None  # type: ignore[attr-defined]
    module.HUMAN_FILES = files  # type: ignore[attr-defined]
    return module


TINY = HumanFile("Tiny release", _recognizes, _read)


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``metrics=tinyrater`` declaring the Tiny release format, as an installed plugin."""
    register(monkeypatch, "metrics", "tinyrater", _metric_module("tinyrater", TINY))
    claim_formats.cache_clear()
    yield
    claim_formats.cache_clear()


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(store uri, run id) of a real job over SUMMARIES."""
    folder = tmp_path_factory.mktemp("claim-files")
    run_id = run_job(folder, SUMMARIES)
    return f"sqlite:///{folder / 'mlflow.db'}", run_id


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _humans(uri: str) -> list[Any]:
    client = MlflowClient(uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    return list(client.search_runs(ids, "tags.`runner.kind` = 'human'")) if ids else []


def _human_assessments(uri: str, run_id: str) -> dict[str, list[tuple[str, Any]]]:
    client = MlflowClient(uri)
    experiment = client.get_run(run_id).info.experiment_id
    traces = client.search_traces(
        locations=[experiment], filter_string=f"attributes.run_id = '{run_id}'"
    )
    return {
        t.info.tags["runner.document"]: [
            (a.name, a.value) for a in t.info.assessments if a.source.source_type == "HUMAN"
        ]
        for t in traces
    }


@pytest.mark.usefixtures("tiny")
def test_a_declared_format_is_recognized_read_and_recorded_on_the_judged_traces(
    judged: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_id = judged
    release = _write(tmp_path / "release.json", RELEASE)
    assert main(["import", str(release), "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "tiny t-3: no summary; skipped"  # the reader's note, one line
    assert out[1] == f"2 judgments read from {release}"
    assert "  claims: 2 (annotator tiny: 2)" in out
    assert "  summaries with a label: 2 (1 faithful)" in out
    # t-1: 2 sentences supported; t-2: 3 sentences, the third unsupported.
    assert "  claims labelled: 5 (supported 4, partial 0, unsupported 1, cannot_tell 0)" in out
    (human,) = _humans(uri)
    assert f"recorded human run {human.info.run_id} in {uri}" in out
    assert "  7 HUMAN assessments on the judged documents' traces" in out  # 2 labels, 5 claims
    assert not any("no judged run" in line for line in out)

    # The judgments name the metric whose format read them (the reader named none).
    client = MlflowClient(uri)
    local = client.download_artifacts(human.info.run_id, "human/judgments.jsonl", str(tmp_path))
    stored = [from_record(json.loads(x)) for x in Path(local).read_text().splitlines()]
    assert {j.metric for j in stored} == {"tinyrater"}
    assert human.data.metrics["tinyrater/faithful"] == pytest.approx(0.5)
    assert human.data.metrics["tinyrater/supported"] == pytest.approx((1.0 + 2 / 3) / 2)

    found = _human_assessments(uri, run_id)
    assert found["t-1"] == [
        ("tinyrater/faithful", True),
        ("tinyrater/claim", "supported"),
        ("tinyrater/claim", "supported"),
    ]
    assert found["t-2"][0] == ("tinyrater/faithful", False)
    assert [v for n, v in found["t-2"][1:]] == ["supported", "supported", "unsupported"]

    # The same file again: refused as every kind is, nothing added.
    assert main(["import", str(release), "--tracking-uri", uri]) == 0
    again = capsys.readouterr().out
    assert f"already recorded: human run {human.info.run_id}" in again
    assert len(_humans(uri)) == 1


@pytest.mark.usefixtures("tiny")
def test_with_no_judged_run_the_human_run_is_recorded_and_the_console_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    release = _write(tmp_path / "release.json", RELEASE)
    assert main(["import", str(release), "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out.count("  no judged run found; assessments not written") == 1
    assert len(_humans(uri)) == 1


@pytest.mark.usefixtures("tiny")
def test_a_label_whose_summary_differs_from_the_runs_is_named_at_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named once; and the run's summaries.json, which the import matches three ways
    (unknown documents, judged runs, differing labels), is downloaded once."""
    from runner.human import matching

    uri, run_id = logged_run(tmp_path, SUMMARIES)
    edited = json.loads(json.dumps(RELEASE))
    edited["tiny_release"][1]["summary"] = SUMMARIES["t-2"].replace("a map", "a chart")
    release = _write(tmp_path / "release.json", edited)
    downloads: list[str] = []
    download = matching._download_summaries
    monkeypatch.setattr(
        matching,
        "_download_summaries",
        lambda uri, run: downloads.append(run) or download(uri, run),
    )
    assert main(["import", str(release), "--tracking-uri", uri]) == 0
    assert downloads == [run_id]
    out = capsys.readouterr().out.splitlines()
    assert (
        "1 of 2 labelled summaries differ from the run's summary of their document (compared "
        "by text, runs of whitespace as one space): recorded, but no run's verdict is compared "
        "with them"
    ) in out
    changed = "word 4: 'chart.' in the label's summary, 'map.' in the run's"
    assert f"  't-2' by tiny: {changed} (run {run_id[:8]})" in out


@pytest.mark.usefixtures("tiny")
def test_a_file_of_no_known_format_is_one_line_naming_the_formats_tried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    other = _write(tmp_path / "other.json", {"ratings": [1, 2]})
    assert main(["import", str(other), "--tracking-uri", uri]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: ")
    assert "Tiny release (metrics=tinyrater)" in err and "Label Studio JSON export" in err
    assert _humans(uri) == []


@pytest.mark.usefixtures("tiny")
def test_a_claim_label_outside_the_four_is_one_line_and_nothing_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    entries = [dict(RELEASE["tiny_release"][0], label="PartialSupport")]
    release = _write(tmp_path / "release.json", {"tiny_release": entries})
    assert main(["import", str(release), "--tracking-uri", uri]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and "'PartialSupport'" in err and "t-1" in err
    assert "judgments read" not in captured.out
    assert _humans(uri) == []


def test_a_file_two_formats_recognize_is_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twin = HumanFile("Tiny twin", _recognizes, _read)
    register(monkeypatch, "metrics", "tinyrater", _metric_module("tinyrater", TINY))
    register(monkeypatch, "metrics", "tinytwin", _metric_module("tinytwin", twin))
    claim_formats.cache_clear()
    try:
        uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
        release = _write(tmp_path / "release.json", RELEASE)
        assert main(["import", str(release), "--tracking-uri", uri]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err
        assert "Tiny release (metrics=tinyrater)" in err and "Tiny twin (metrics=tinytwin)" in err
        assert _humans(uri) == []
    finally:
        claim_formats.cache_clear()


@pytest.mark.usefixtures("tiny")
def test_a_label_studio_export_without_a_key_still_asks_for_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = _write(tmp_path / "export.json", [{"id": 1, "data": {"summary": "x"}}])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["import", str(export), "--tracking-uri", uri]) == 2
    assert "give --key key.json" in capsys.readouterr().err


def test_the_storysumm_release_is_imported_as_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """96 judgments; the human run's mean faithful is the raw file's share of label 1."""
    path = SHARED_DATA / "faithfulness" / "storysumm" / "storysumm.json"
    if not path.exists():
        missing_shared("StorySumm import")
    claim_formats.cache_clear()
    # The release's one malformed line: a stray '", "' before a line break.
    raw = json.loads(path.read_text(encoding="utf-8").replace('", "\n', '",\n'))
    share = sum(1 for entry in raw.values() if entry["label"] == 1) / len(raw)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["import", str(path), "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    assert f"{len(raw)} judgments read from {path}" in out and len(raw) == 96
    assert "no judged run found; assessments not written" in out
    (human,) = _humans(uri)
    assert human.data.metrics["faithfulness/faithful"] == pytest.approx(share)
    local = MlflowClient(uri).download_artifacts(
        human.info.run_id, "human/judgments.jsonl", str(tmp_path)
    )
    stored = [from_record(json.loads(x)) for x in Path(local).read_text().splitlines()]
    assert sorted(j.doc_id for j in stored) == sorted(raw)
