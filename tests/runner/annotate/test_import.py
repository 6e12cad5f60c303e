"""``python -m runner.annotate import``: an export back as judgments, summarized and recorded.

The authors' own Label Studio export (../shared) is attributed by summary text and tallied as
their counts file; an export of our tasks (answers written here as Label Studio writes them)
comes back through the key, its stray task listed, and becomes a human run in the store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.annotate.__main__ import main
from runner.human.judgments import CoherenceAnnotation, from_record
from runner.tracking.reader import find_runs
from tests.conftest import SHARED_DATA, missing_shared
from tests.runner.annotate.conftest import HIER

HUMAN = SHARED_DATA / "booookscore" / "human"


def test_the_authors_export_is_attributed_by_text_and_tallied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not HUMAN.is_dir():
        missing_shared("the authors' Label Studio export")
    out = tmp_path / "judgments.jsonl"
    code = main([
        "import", str(HUMAN / "preference-formal-annotator1.labelstudio.json"),
        "--system", f"hier={HUMAN / 'gpt4-4096-hier.human-annotations.json'}",
        "--system", f"inc={HUMAN / 'gpt4-4096-inc.summaries-annotator1-books.json'}",
        "--no-record", "--out", str(out),
    ])  # fmt: skip
    shown = capsys.readouterr().out
    assert code == 0
    counts = json.loads((HUMAN / "preference-formal-annotator1.counts.json").read_text())
    for criterion in ("detail", "structure", "logic", "preference"):
        wins = counts[criterion.capitalize()]
        expected = f"{criterion}: inc {wins['inc']}, hier {wins['hier']}, draw {wins['draw']}"
        assert f"  {expected}\n" in shown
    assert "20 judgments read" in shown and "preference: 20 (annotator 5: 20)" in shown
    assert len(out.read_text().splitlines()) == 20


def _annotated(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Label Studio's JSON export of ``tasks``, each answered with one span by user 7."""
    exported = []
    for number, task in enumerate(tasks, 1):
        summary = task["data"]["summary"]
        first = summary.split(". ")[0] + "."
        value = {"start": 0, "end": len(first), "text": first, "labels": ["language"]}
        result = [{"id": "r", "from_name": "error_type", "to_name": "summary",
                   "type": "labels", "value": value}]  # fmt: skip
        exported.append({"id": number, "data": task["data"],
                         "annotations": [{"completed_by": 7, "result": result}]})  # fmt: skip
    return exported


def test_our_export_comes_back_through_the_key_and_is_recorded(
    store: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["export", "coherence", store["hier"], "--seed", "4", "--out", str(out)]
    assert main([*args, "--tracking-uri", store["uri"]]) == 0
    tasks = json.loads((out / "tasks.json").read_text())
    stray = {"data": {"uid": "t-unknown", "book": "doc-0", "summary": HIER["doc-0"]}}
    export = tmp_path / "project.json"
    export.write_text(json.dumps(_annotated([*tasks, stray])))
    capsys.readouterr()
    jsonl = tmp_path / "judgments.jsonl"
    code = main([
        "import", str(export), "--key", str(out / "key.json"), "--out", str(jsonl),
        "--tracking-uri", store["uri"],
    ])  # fmt: skip
    shown = capsys.readouterr().out
    assert code == 0
    assert (
        f"{len(HIER)} judgments read" in shown and f"coherence: {len(HIER)} (annotator 7" in shown
    )
    assert "1 tasks not attributed" in shown and "uid 't-unknown' is not in the key" in shown
    judgments = [from_record(json.loads(line)) for line in jsonl.read_text().splitlines()]
    assert {(j.doc_id, j.system) for j in judgments} == {(d, store["hier"]) for d in HIER}
    assert all(isinstance(j, CoherenceAnnotation) and j.flagged == 1 for j in judgments)
    human = [r for r in find_runs(store["uri"]) if r.tags.get("runner.kind") == "human"]
    assert len(human) == 1 and human[0].run_id in shown
    assert human[0].tags["human.judged_run"] == store["hier"]
    assert human[0].metrics["booookscore/score"] == pytest.approx(100 * (1 - 1 / 3))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--key", "NOKEY"], "key file"),
        ([], "give --key key.json"),
        (["--key", "LIST"], "is not an object"),
    ],
)
def test_bad_imports_are_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "list.json").write_text("[]")
    export = tmp_path / "export.json"
    export.write_text("[]")
    args = [a.replace("NOKEY", str(tmp_path / "nope")).replace("LIST", str(tmp_path / "list.json"))
            for a in args]  # fmt: skip
    assert main(["import", str(export), *args, "--no-record"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
