"""Misnamed Label Studio controls and value keys (issue 31, case 3): one line, never dropped.

A coherence export whose Labels control is not ``error_type``, or whose value says ``label``
for ``labels``, once read as spans with no error types. Every result's control and value
keys are checked against the task kind's labeling config; the controls the reader knows
are held equal to the XML ``runner.annotate.configs`` writes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from runner.annotate.configs import labeling_config
from runner.human.judgments import HumanDataError
from runner.human.labelstudio import read_labelstudio
from runner.human.task_kinds import kinds, task_kind
from tests.runner.human.lstasks import PAIRWISE, annotation, choices, region, task, textarea, write

BOOK = "a-book"
SUMMARY = "Anna leaves home. She finds work in the city. Her mother writes."
SPAN = "She finds work in the city."
COHERENCE_KEY = {"kind": "coherence", "seed": 1, "tasks": {"s1": {"doc_id": BOOK, "system": "inc"}}}
PAIR_KEY = {
    "kind": "preference",
    "seed": 1,
    "tasks": {"p1": {"doc_id": BOOK, "systems": ["a", "b"]}},
}
VALIDATION_KEY = {"kind": "validation", "seed": 1, "tasks": {"v1": {"doc_id": BOOK, "source": "m"}}}


def _coherence(result: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = {"uid": "s1", "book": BOOK, "summary": SUMMARY}
    return [task(31, data, annotation(2, result))]


def _renamed(items: list[dict[str, Any]], control: str) -> list[dict[str, Any]]:
    return [{**item, "from_name": control} for item in items]


def _error(path: Path, key: dict[str, Any]) -> str:
    with pytest.raises(HumanDataError) as info:
        read_labelstudio(path, key, None)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_labels_control_under_another_name_is_one_line_not_a_span_without_types(
    tmp_path: Path,
) -> None:
    labels = _renamed(region("r1", SUMMARY, SPAN, ["salience"]), "error_types")
    message = _error(write(tmp_path, _coherence(labels)), COHERENCE_KEY)
    assert message.startswith(f"{tmp_path / 'export.json'}: task 31 (book 'a-book'), ")
    assert "field 'from_name': unknown control 'error_types'" in message
    assert "the coherence labeling config has error_type (Labels: value labels" in message
    assert "questions (TextArea" in message and "labeling-coherence.xml" in message


def test_label_for_labels_in_the_value_is_one_line(tmp_path: Path) -> None:
    (item,) = region("r1", SUMMARY, SPAN, ["salience"])
    value = dict(item["value"])
    value["label"] = value.pop("labels")
    message = _error(write(tmp_path, _coherence([{**item, "value": value}])), COHERENCE_KEY)
    assert "task 31 (book 'a-book'), field 'value.label': unknown key of control 'error_type'" in (
        message
    )
    assert "error_type (Labels: value labels/start/end/text)" in message


def test_a_labels_result_without_its_labels_key_is_one_line(tmp_path: Path) -> None:
    (item,) = region("r1", SUMMARY, SPAN, ["salience"])
    value = {k: v for k, v in item["value"].items() if k != "labels"}
    message = _error(write(tmp_path, _coherence([{**item, "value": value}])), COHERENCE_KEY)
    assert "field 'value.labels': missing in control 'error_type'" in message


def test_a_region_with_questions_but_no_error_types_is_one_line(tmp_path: Path) -> None:
    _, questions = region("r1", SUMMARY, SPAN, ["salience"], "why the city?")
    message = _error(write(tmp_path, _coherence([questions])), COHERENCE_KEY)
    assert "task 31 (book 'a-book'), field 'error_type': region r1 has no 'error_type'" in message


def test_pairwise_and_validation_controls_are_checked_too(tmp_path: Path) -> None:
    data = {"uid": "p1", "book": BOOK, "summary_1": "x", "summary_2": "y"}
    result = choices(**PAIRWISE) + [textarea("detail_comment", "more on Anna")]
    path = write(tmp_path, [task(5, data, annotation(1, result))], "pairs.json")
    message = _error(path, PAIR_KEY)
    assert "task 5 (book 'a-book'), field 'from_name': unknown control 'detail_comment'" in message
    assert "detail_comments (TextArea: value text)" in message
    data = {"uid": "v1", "book": BOOK, "summary": SUMMARY, "annotation": SPAN}
    result = choices(agreement="Agree")
    result[0]["value"] = {"choice": ["Agree"]}
    path = write(tmp_path, [task(6, data, annotation(1, result))], "verdicts.json")
    message = _error(path, VALIDATION_KEY)
    assert "task 6 (book 'a-book'), field 'value.choice': unknown key of control 'agreement'" in (
        message
    )


def test_the_correct_names_still_read(tmp_path: Path) -> None:
    result = region("r1", SUMMARY, SPAN, ["salience"], "why the city?")
    (judgment,), unmatched = read_labelstudio(
        write(tmp_path, _coherence(result)), COHERENCE_KEY, None
    )
    assert unmatched == []
    assert [(s.text, s.labels, s.questions) for s in judgment.singles] == [  # type: ignore[union-attr]
        (SPAN, ("salience",), "why the city?")
    ]


@pytest.mark.parametrize("kind", kinds())
def test_the_reader_knows_exactly_the_controls_the_labeling_config_writes(kind: str) -> None:
    controls = task_kind(kind).task.controls
    root = ET.fromstring(labeling_config(kind))
    written = {
        element.get("name"): element.tag
        for element in root.iter()
        if element.tag in ("Choices", "Labels", "TextArea")
    }
    assert written == {name: control.tag for name, control in controls.items()}
    per_region = {e.get("name") for e in root.iter("TextArea") if e.get("perRegion") == "true"}
    assert per_region == {
        n for n, c in controls.items() if "start" in c.may and c.tag == "TextArea"
    }
