"""read_labelstudio: the three task kinds, attribution by key or by text, and bad exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.human.judgments import (
    CoherenceAnnotation,
    HumanDataError,
    Preference,
    Verdict,
    from_record,
    to_record,
)
from runner.human.labelstudio import read_labelstudio
from tests.runner.human.lstasks import (
    PAIRWISE,
    annotation,
    choices,
    region,
    relation,
    task,
    textarea,
    write,
)

BOOK = "a-book"
INC = "Anna leaves home. She finds work in the city."
HIER = "In the city, Anna works. Her mother writes to her. She goes home."
CANDIDATES = {"inc": {BOOK: INC}, "hier": {BOOK: HIER}}
PAIR_KEY = {
    "kind": "preference",
    "seed": 1,
    "tasks": {"u1": {"doc_id": BOOK, "systems": ["run-b", "run-a"]}},
}


def pairwise(tid: int = 7, data: dict[str, Any] | None = None, **picked: str) -> dict[str, Any]:
    data = data or {"book": BOOK, "summary_1": INC, "summary_2": HIER}
    result = choices(
        **{
            **PAIRWISE,
            "contradiction": "Yes",
            "omission_summary_1": "No",
            "omission_summary_2": "Yes",
            **picked,
        }
    )
    result.append(textarea("omission_summary_2_comments", "the mother is missing"))
    return task(tid, data, annotation(5, result))


def one_line_error(path: Path, *parts: str, **kwargs: Any) -> str:
    with pytest.raises(HumanDataError) as info:
        read_labelstudio(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    for part in (str(path), *parts):
        assert part in message, (part, message)
    return message


def test_pairwise_attributed_by_text_maps_sides_flags_and_comments(tmp_path: Path) -> None:
    path = write(tmp_path, [pairwise()])
    judgments, unmatched = read_labelstudio(path, None, CANDIDATES)
    assert unmatched == []
    assert judgments == [
        Preference(
            BOOK,
            ("inc", "hier"),
            "5",
            {"detail": "inc", "structure": "hier", "logic": "draw", "preference": "hier"},
            {"contradiction": True, "omission:inc": False, "omission:hier": True},
            {"omission:hier": "the mother is missing"},
        )
    ]


def test_text_matching_ignores_whitespace_only(tmp_path: Path) -> None:
    data = {"book": BOOK, "summary_1": HIER.replace(" ", "\n  ") + "\n", "summary_2": INC}
    judgments, unmatched = read_labelstudio(
        write(tmp_path, [pairwise(data=data)]), None, CANDIDATES
    )
    assert unmatched == [] and isinstance(judgments[0], Preference)
    assert judgments[0].systems == ("hier", "inc")
    data = {"book": BOOK, "summary_1": HIER.lower(), "summary_2": INC}
    judgments, unmatched = read_labelstudio(
        write(tmp_path, [pairwise(data=data)]), None, CANDIDATES
    )
    assert judgments == []
    assert unmatched == [
        f"task 7 (book {BOOK!r}): summary_1: the summary text matches none of inc, hier"
    ]


def test_a_text_two_systems_share_is_listed_never_guessed(tmp_path: Path) -> None:
    candidates = {**CANDIDATES, "copy": {BOOK: INC}}
    judgments, unmatched = read_labelstudio(write(tmp_path, [pairwise()]), None, candidates)
    assert judgments == []
    assert unmatched == [
        f"task 7 (book {BOOK!r}): summary_1: the summary text matches several systems: inc, copy"
    ]
    other = {"book": "other-book", "summary_1": INC, "summary_2": HIER}
    _, unmatched = read_labelstudio(write(tmp_path, [pairwise(data=other)]), None, CANDIDATES)
    assert unmatched == [
        "task 7 (book 'other-book'): summary_1: no candidate system has a summary of 'other-book'"
    ]


def test_pairwise_attributed_by_key_uid(tmp_path: Path) -> None:
    data = {"uid": "u1", "book": BOOK, "summary_1": "x", "summary_2": "y"}
    stray = {"uid": "u9", "book": BOOK, "summary_1": "x", "summary_2": "y"}
    path = write(tmp_path, [pairwise(data=data), pairwise(8, data=stray)])
    judgments, unmatched = read_labelstudio(path, PAIR_KEY, None)
    assert [j.systems for j in judgments if isinstance(j, Preference)] == [("run-b", "run-a")]
    assert judgments[0].choices["detail"] == "run-b"  # type: ignore[union-attr]
    assert unmatched == [f"task 8 (book {BOOK!r}): uid 'u9' is not in the key"]


def test_span_annotation_singles_relations_and_each_annotator(tmp_path: Path) -> None:
    summary = HIER
    first = [
        *region("a", summary, "In the city, Anna works.", ["discontinuity"], "why here?"),
        *region("b", summary, "She goes home.", []),
        *region("c", summary, "Her mother writes", ["entity omission"], "who is she?"),
        relation("a", "b"),
    ]
    data = {"uid": "s1", "book": BOOK, "summary": summary}
    tasks = [
        task(3, data, annotation(1, first), annotation(2, []), annotation(4, [], cancelled=True)),
        task(4, {"uid": "s2", "book": BOOK, "summary": summary}),
    ]
    key = {
        "kind": "coherence",
        "seed": 1,
        "tasks": {
            "s1": {"doc_id": BOOK, "system": "hier"},
            "s2": {"doc_id": BOOK, "system": "hier"},
        },
    }
    judgments, unmatched = read_labelstudio(write(tmp_path, tasks), key, None)
    assert unmatched == [f"task 4 (book {BOOK!r}): no completed annotation"]
    one, two = judgments
    assert isinstance(one, CoherenceAnnotation) and isinstance(two, CoherenceAnnotation)
    assert (one.annotator, two.annotator) == ("1", "2")
    assert [s.text for s in one.singles] == ["Her mother writes"]
    assert one.singles[0].labels == ("entity omission",)
    assert one.singles[0].questions == "who is she?"
    (link,) = one.relations
    assert (link.first.text, link.second.text) == ("In the city, Anna works.", "She goes home.")
    assert (link.questions, link.labels) == ("why here?", ("discontinuity",))
    assert one.flagged == 2 and two.flagged == 0 and two.system == "hier"


def test_span_annotation_without_key_by_summary_text(tmp_path: Path) -> None:
    tasks = [
        task(
            3,
            {"book": BOOK, "summary": INC},
            annotation(1, region("a", INC, "She finds work", ["salience"])),
        )
    ]
    (judgment,), unmatched = read_labelstudio(write(tmp_path, tasks), None, CANDIDATES)
    assert unmatched == [] and isinstance(judgment, CoherenceAnnotation)
    assert judgment.system == "inc"


def test_validation_verdicts_take_the_source_from_the_key(tmp_path: Path) -> None:
    data = {
        "uid": "v1",
        "book": BOOK,
        "summary": HIER,
        "annotation": "She goes home.",
        "annotation_questions": "Why?",
    }
    result = choices(agreement="Partially agree") + [textarea("reasons", "B. too picky")]
    key = {"kind": "validation", "seed": 2, "tasks": {"v1": {"doc_id": BOOK, "source": "model"}}}
    path = write(tmp_path, [task(9, data, annotation(3, result))])
    judgments, unmatched = read_labelstudio(path, key, None)
    assert unmatched == []
    assert judgments == [
        Verdict(
            BOOK,
            "model",
            {"text": "She goes home.", "questions": "Why?"},
            "Partially agree",
            "3",
            "B. too picky",
        )
    ]
    judgments, unmatched = read_labelstudio(path, None, CANDIDATES)
    assert judgments == []
    assert unmatched == [f"task 9 (book {BOOK!r}): no key to say whose annotation it is"]


# Bad exports: each one line naming the file, the task and the field.


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text('[{"id": 1,', encoding="utf-8")
    one_line_error(path, "not JSON", "line 1", candidates=CANDIDATES)


def test_not_a_list_of_tasks(tmp_path: Path) -> None:
    path = write(tmp_path, {"tasks": []})  # type: ignore[arg-type]
    one_line_error(path, "not a list of tasks", "JSON-MIN", candidates=CANDIDATES)


def test_wrong_task_kind_for_what_was_asked(tmp_path: Path) -> None:
    path = write(tmp_path, [pairwise()])
    one_line_error(
        path,
        "task 7",
        "'from_name'",
        "a preference task, not coherence",
        candidates=CANDIDATES,
        kind="coherence",
    )
    key = {"kind": "coherence", "seed": 1, "tasks": {}}
    one_line_error(path, "task 7", "'from_name'", "not coherence", key=key)


def test_unknown_choice_value(tmp_path: Path) -> None:
    path = write(tmp_path, [pairwise(logic="Summary 3")])
    one_line_error(path, "task 7", "field 'logic'", "'Summary 3'", "Draw", candidates=CANDIDATES)
    path = write(tmp_path, [pairwise(contradiction="Maybe")])
    one_line_error(path, "task 7", "field 'contradiction'", "['Yes', 'No']", candidates=CANDIDATES)


def test_pairwise_missing_criterion(tmp_path: Path) -> None:
    result = choices(detail="Summary 1", structure="Draw", preference="Summary 1")
    path = write(
        tmp_path,
        [task(2, {"book": BOOK, "summary_1": INC, "summary_2": HIER}, annotation(1, result))],
    )
    one_line_error(path, "task 2", "field 'logic'", "no choice made", candidates=CANDIDATES)


def test_span_text_not_in_the_summary(tmp_path: Path) -> None:
    result = region("a", INC, "She flies to the moon", ["salience"])
    path = write(tmp_path, [task(3, {"book": BOOK, "summary": INC}, annotation(1, result))])
    one_line_error(path, "task 3", "'value.text'", "not in the summary", candidates=CANDIDATES)


def test_label_not_an_error_type(tmp_path: Path) -> None:
    result = region("a", INC, "She finds work", ["boring"])
    path = write(tmp_path, [task(3, {"book": BOOK, "summary": INC}, annotation(1, result))])
    one_line_error(
        path, "task 3", "field 'labels'", "'boring'", "entity omission", candidates=CANDIDATES
    )


def test_same_annotator_twice_on_one_task(tmp_path: Path) -> None:
    data = {"book": BOOK, "summary": INC}
    path = write(tmp_path, [task(3, data, annotation(1, []), annotation(1, []))])
    one_line_error(
        path,
        "task 3",
        "'completed_by'",
        "annotator 1 annotated this task twice",
        candidates=CANDIDATES,
    )


def test_key_of_another_export(tmp_path: Path) -> None:
    data = {"uid": "u1", "book": "another-book", "summary_1": "x", "summary_2": "y"}
    path = write(tmp_path, [pairwise(data=data)])
    one_line_error(path, "task 7", "field 'book'", f"uid u1 is {BOOK!r}", key=PAIR_KEY)


def test_neither_key_nor_candidates(tmp_path: Path) -> None:
    one_line_error(write(tmp_path, [pairwise()]), "task 7", "field 'uid'", "no key")


def test_unknown_verdict(tmp_path: Path) -> None:
    data = {"book": BOOK, "summary": INC, "annotation": "x", "source": "human"}
    path = write(tmp_path, [task(9, data, annotation(3, choices(agreement="Mostly")))])
    one_line_error(path, "task 9", "field 'agreement'", "'Mostly'", "Don't agree")


def test_every_kind_survives_its_json_record(tmp_path: Path) -> None:
    summary_task = task(
        3,
        {"book": BOOK, "summary": HIER},
        annotation(
            1,
            [
                *region("a", HIER, "In the city, Anna works.", ["discontinuity"], "why?"),
                *region("b", HIER, "She goes home.", ["language"]),
                relation("a", "b"),
            ],
        ),
    )
    verdict_task = task(
        9,
        {"book": BOOK, "summary": HIER, "annotation": "x", "source": "human"},
        annotation(3, choices(agreement="Agree")),
    )
    path = write(tmp_path, [pairwise(), summary_task, verdict_task])
    judgments, unmatched = read_labelstudio(path, None, CANDIDATES)
    assert unmatched == [] and len(judgments) == 3
    for judgment in judgments:
        assert from_record(json.loads(json.dumps(to_record(judgment)))) == judgment
