"""Reading judge answers: the paper's form, messy variants, and batched JSON lists."""

from __future__ import annotations

import json

import pytest

from metrics.booookscore.parse import LABELS, normalize_label, parse_answer, parse_batch_answer

CLEAN = [
    ("Questions: no confusion\nTypes: no confusion", None),
    ("Questions: Where or what is Prospera?\nTypes: entity omission", ("entity omission",)),
    (
        "Questions: How does quitting relate to swimming?\nTypes: discontinuity, causal omission",
        ("discontinuity", "causal omission"),
    ),
]

MESSY_CLEAN = [
    # different case, extra prose before and after
    (
        "Sure, here is my annotation.\nQUESTIONS: No Confusion\ntypes: NO CONFUSION\n"
        "Hope it helps!",
        None,
    ),
    ("No confusion.", None),
    ('"no confusion"', None),
    ("No confusion; the sentence follows from the previous one.", None),
    ("Questions: no confusion", None),
    ("Questions: None\nTypes: No confusion.", None),
    ("**Questions:** no confusion\n**Types:** no confusion", None),
    ("[Your response]\nQuestions: no confusion\nTypes: no confusion", None),
]

MESSY_ERRORS = [
    # markdown, hyphens, trailing period, capitals
    ("**Questions:** Who is Cleolind?\n**Types:** Entity-Omission.", ("entity omission",)),
    # numbered lists on the following lines
    (
        "Questions:\n1. Who is John?\n2. Is he Lia's husband?\n"
        "Types:\n1. entity omission\n2. causal omission",
        ("entity omission", "causal omission"),
    ),
    # bullet list, 'and', duplicates kept once
    (
        "Questions: Why?\nTypes:\n- Causal omission\n- causal omission and salience",
        ("causal omission", "salience"),
    ),
    # bracketed list, singular field name, remark in parentheses
    (
        "Question: Who?\nType: [entity omission (Prospera), event_omission]",
        ("entity omission", "event omission"),
    ),
    # the model goes on to invent another example: the first answer wins
    (
        (
            "Questions: What happened at the lock?\nTypes: event omission\n[Example sentence]\n"
            "Foo.\n[Example response]\nQuestions: no confusion\nTypes: no confusion"
        ),
        ("event omission",),
    ),
    (
        "  questions: Why now?  \n  types:  Discontinuity ;  Language  ",
        ("discontinuity", "language"),
    ),
    ("1. Questions: Who?\n2. Types: duplication", ("duplication",)),
    ("Questions: Who?\nTypes of confusion: inconsistency", ("inconsistency",)),
]

UNPARSED = [
    ("", "empty"),
    ("   \n  ", "empty"),
    ("The sentence seems fine to me.", "no 'Types:'"),
    ("Questions: Who is X?", "no 'Types:'"),
    ("Questions: Who is X?\nTypes: confusing wording", "unknown type"),
    ("Questions: Who is X?\nTypes: entity omission, plot hole", "unknown type 'plot hole'"),
    ("Questions: Who?\nTypes:", "empty Types"),
    ("Questions: Who?\nTypes: none", "unknown type 'none'"),
    ("Questions: no confusion\nTypes: entity omission", "questions say"),
    ("Questions: Who is X?\nTypes: no confusion", "questions asked"),
    ("Questions: Who?\nTypes: entity omission, no confusion", "mixed"),
]


@pytest.mark.parametrize(("answer", "types"), CLEAN + MESSY_CLEAN + MESSY_ERRORS)
def test_readable_answers(answer: str, types: tuple[str, ...] | None) -> None:
    verdict = parse_answer(answer)
    assert verdict.parsed, verdict.error
    assert verdict.types == types
    assert verdict.confused == (types is not None)
    assert (verdict.questions is None) == (types is None)
    assert verdict.answer == answer


@pytest.mark.parametrize(("answer", "reason"), UNPARSED)
def test_unreadable_answers_are_never_scored(answer: str, reason: str) -> None:
    verdict = parse_answer(answer)
    assert not verdict.parsed
    assert reason in verdict.error
    assert not verdict.confused


def test_questions_keep_their_text() -> None:
    verdict = parse_answer("Questions: Who is John? Is he Lia's husband?\nTypes: entity omission")
    assert verdict.questions == "Who is John? Is he Lia's husband?"


def test_every_label_normalizes_to_itself() -> None:
    assert len(LABELS) == 8
    for label in LABELS:
        assert normalize_label(label.upper().replace(" ", "-") + ".") == label


SENTENCES = ["Aida vanishes.", "Salma searches.", "Fausto appears."]


def _item(num: object, sentence: object, questions: object = None, types: object = None) -> dict:
    return {"sentence_num": num, "sentence": sentence, "questions": questions, "types": types}


def test_batch_answer_in_order() -> None:
    answer = json.dumps(
        [
            _item(1, SENTENCES[0]),
            _item(2, SENTENCES[1], "Why?", ["causal omission"]),
            _item(3, SENTENCES[2], "Who is Fausto?", ["Entity omission", "discontinuity"]),
        ]
    )
    found, error = parse_batch_answer(answer, SENTENCES)
    assert error == ""
    assert [found[i].types for i in range(3)] == [
        None,
        ("causal omission",),
        ("entity omission", "discontinuity"),
    ]
    assert found[2].questions == "Who is Fausto?"


def test_batch_answer_tolerates_fences_prose_strings_and_trailing_commas() -> None:
    answer = (
        "Here you go:\n```json\n[\n"
        '{"sentence_num": "2", "sentence": "salma SEARCHES", "questions": "no confusion", '
        '"types": "no confusion"},\n'
        '{"sentence_num": 1, "sentence": "Aida vanishes.", "questions": "Why?", '
        '"types": "event omission, causal omission"},\n'
        "]\n```\nDone."
    )
    found, error = parse_batch_answer(answer, SENTENCES)
    assert error == ""
    assert found[0].types == ("event omission", "causal omission")
    assert found[1].parsed and found[1].types is None
    assert 2 not in found  # missing: the caller asks again


def test_batch_answer_mismatches_are_left_out() -> None:
    answer = json.dumps(
        [
            _item(1, "Something else entirely.", None, None),  # number and text disagree
            _item(2, SENTENCES[1]),
            _item(2, SENTENCES[1], "Why?", ["salience"]),  # two answers for one sentence
            _item(7, SENTENCES[2]),  # out of range, but the text identifies it
        ]
    )
    found, _ = parse_batch_answer(answer, SENTENCES)
    assert set(found) == {2}


def test_batch_answer_items_with_bad_types_are_unparsed() -> None:
    answer = json.dumps(
        [_item(1, SENTENCES[0], "Who?", ["plot hole"]), _item(2, SENTENCES[1], "Why?", None)]
    )
    found, _ = parse_batch_answer(answer, SENTENCES)
    assert not found[0].parsed and "unknown type" in found[0].error
    assert not found[1].parsed


@pytest.mark.parametrize("answer", ["", "no JSON here", "[not json", '{"sentence_num": }'])
def test_batch_answer_without_a_list(answer: str) -> None:
    found, error = parse_batch_answer(answer, SENTENCES)
    assert found == {} and error


def test_batch_answer_single_object() -> None:
    found, error = parse_batch_answer(json.dumps(_item(1, SENTENCES[0])), SENTENCES[:1])
    assert error == "" and found[0].parsed
