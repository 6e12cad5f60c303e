"""``python -m runner.annotate export``: blind tasks, a seed that reproduces them, a key.

Two runs are written once to a sqlite store (``summaries.json``, and a BooookScore
``annotations.json`` on one), the way a job logs them; the exports are read from there and
from ``{doc_id: summary}`` files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from metrics.booookscore.parse import LABELS as ERROR_TYPES
from runner.annotate.__main__ import main
from runner.annotate.configs import kinds, labeling_config
from runner.human.judgments import SIDE_CHOICES, VERDICTS
from tests.runner.annotate.conftest import HIER, INC


def export(tmp_path: Path, *args: str) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """Run export into ``tmp_path/out``; the tasks, key and tasks.json text."""
    out = tmp_path / "out"
    assert main(["export", *args, "--out", str(out)]) == 0
    text = (out / "tasks.json").read_text()
    return json.loads(text), json.loads((out / "key.json").read_text()), text


def test_pairwise_tasks_are_blind_and_the_key_maps_each_side_back(
    store: dict[str, str], tmp_path: Path
) -> None:
    args = ["preference", store["hier"], store["inc"], "--tracking-uri", store["uri"]]
    tasks, key, text = export(tmp_path, *args, "--seed", "11")
    for secret in (store["hier"], store["inc"], "hier", "inc", "Hier", "Inc", "run"):
        assert secret not in text.replace("Hier summary", "").replace("Inc summary", "")
    assert not re.search(r"[0-9a-f]{32}", text)  # no run id of any shape
    assert key["kind"] == "preference" and key["seed"] == 11
    assert len(tasks) == 10  # doc-10 and doc-11: only hier has them
    summaries = {store["hier"]: HIER, store["inc"]: INC}
    sides = set()
    for task in tasks:
        data = task["data"]
        assert set(data) == {"uid", "book", "summary_1", "summary_2"}
        entry = key["tasks"][data["uid"]]
        assert entry["doc_id"] == data["book"]
        first, second = entry["systems"]
        assert data["summary_1"] == summaries[first][data["book"]]
        assert data["summary_2"] == summaries[second][data["book"]]
        sides.add(first)
    assert sides == {store["hier"], store["inc"]}  # both systems appear as "Summary 1"
    assert [t["data"]["book"] for t in tasks] != sorted(t["data"]["book"] for t in tasks)


def test_the_seed_reproduces_order_sides_and_uids(store: dict[str, str], tmp_path: Path) -> None:
    args = ["preference", store["hier"], store["inc"], "--tracking-uri", store["uri"]]
    first = export(tmp_path / "a", *args, "--seed", "5")
    again = export(tmp_path / "b", *args, "--seed", "5")
    other = export(tmp_path / "c", *args, "--seed", "6")
    assert first == again
    assert first[2] != other[2]
    assert [t["data"]["book"] for t in first[0]] != [t["data"]["book"] for t in other[0]]


def test_span_tasks_from_files_and_runs_mixed_blind(store: dict[str, str], tmp_path: Path) -> None:
    file = tmp_path / "named.json"
    file.write_text(json.dumps({"doc-0": "A summary of theirs.", "doc-1": "Another one."}))
    args = ["coherence", store["inc"], "--system", f"authors={file}", "--seed", "2"]
    tasks, key, text = export(tmp_path, *args, "--tracking-uri", store["uri"])
    assert store["inc"] not in text and "authors" not in text
    assert len(tasks) == len(INC) + 2
    named = {store["inc"]: INC, "authors": json.loads(file.read_text())}
    for task in tasks:
        assert set(task["data"]) == {"uid", "book", "summary"}
        entry = key["tasks"][task["data"]["uid"]]
        assert named[entry["system"]][entry["doc_id"]] == task["data"]["summary"]


def test_validation_tasks_hold_the_runs_flagged_sentences(
    store: dict[str, str], tmp_path: Path
) -> None:
    single = {"id": "x", "span": "S one.", "questions": "Who?", "labels": ["entity omission"]}
    pair = {"id_a": "a", "id_b": "b", "span_a": "S one.", "span_b": "S two."}
    pair.update({"shared_questions": "Why?", "same": True, "shared_labels": []})
    human = {"doc-2": {"summary": "S one. S two.", "singles": [single], "relations": [pair]}}
    file = tmp_path / "human.json"
    file.write_text(json.dumps(human))
    args = ["validation", store["hier"], "--annotations", f"human={file}", "--seed", "1"]
    tasks, key, text = export(tmp_path, *args, "--tracking-uri", store["uri"])
    assert store["hier"] not in text and '"human"' not in text
    shown = {(t["data"]["annotation"], t["data"]["annotation_questions"]) for t in tasks}
    assert shown == {
        ("Hier summary 1.", "Which one?"),
        ("S one.", "Who?"),
        ("A: S one. / B: S two.", "Why?"),
    }
    sources = sorted(entry["source"] for entry in key["tasks"].values())
    assert sources == sorted([store["hier"], "human", "human"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["preference", "--system", "a=MISSING"], "does not exist"),
        (["preference", "--system", "a=ONE"], "exactly two systems"),
        (["coherence", "--system", "noequals"], "NAME=FILE"),
        (["coherence", "0123456789abcdef0123456789abcdef"], "cannot read run"),
        (["validation", "--system", "a=ONE"], "no annotation to validate"),
    ],
)
def test_bad_exports_are_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, store: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    (tmp_path / "ONE").write_text(json.dumps({"d": "text"}))
    args = [a.replace("MISSING", str(tmp_path / "nope")).replace("ONE", str(tmp_path / "ONE"))
            for a in args]  # fmt: skip
    code = main(["export", *args, "--out", str(tmp_path / "o"), "--tracking-uri", store["uri"]])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_an_existing_key_is_not_replaced_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "one.json"
    file.write_text(json.dumps({"d": "text"}))
    args = ["export", "coherence", "--system", f"a={file}", "--out", str(tmp_path / "o")]
    assert main([*args, "--seed", "1"]) == 0
    key = (tmp_path / "o" / "key.json").read_text()
    assert main([*args, "--seed", "2"]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert (tmp_path / "o" / "key.json").read_text() == key
    assert main([*args, "--seed", "2", "--force"]) == 0
    assert json.loads((tmp_path / "o" / "key.json").read_text())["seed"] == 2


def test_labeling_configs_name_the_contracts_controls() -> None:
    pairwise = labeling_config("preference")
    for name in ("detail", "structure", "logic", "preference", "contradiction",
                 "omission_summary_1", "omission_summary_2", "detail_comments"):  # fmt: skip
        assert f'name="{name}"' in pairwise
    assert all(f'value="{v}"' in pairwise for v in SIDE_CHOICES)
    spans = labeling_config("coherence")
    assert '<Labels name="error_type" toName="summary"' in spans
    assert 'name="questions" toName="summary" perRegion="true"' in spans
    assert all(f'<Label value="{t}"/>' in spans for t in ERROR_TYPES)
    validation = labeling_config("validation")
    assert 'name="agreement"' in validation and 'name="reasons"' in validation
    assert all(f'value="{v}"' in validation for v in VERDICTS)
    assert "Not answered anywhere in the summary" in validation.replace("(b) not", "Not")
    assert kinds() == ("preference", "coherence", "validation", "claims")
