"""Structured judge answers: tolerant reading, bounded re-asks, counted failures."""

from __future__ import annotations

from typing import Any

import pytest

from runner.api.judging import Usage, as_list, ask_json, parse_json
from runner.api.types import Message
from tests.helpers.scripted_llm import calls_of, scripted_llm


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"verdict": "yes"}', {"verdict": "yes"}),
        ('```json\n{"verdict": "no"}\n```', {"verdict": "no"}),
        ('Sure! Here it is: {"a": [1, 2,],} Hope that helps {x}', {"a": [1, 2]}),
        ("{'is_vague': True, 'reason': 'generic'}", {"is_vague": True, "reason": "generic"}),
        ('[{"claim": "x"}, {"claim": "y"}]', [{"claim": "x"}, {"claim": "y"}]),
        ('{"text": "a } inside a string", "n": 2}', {"text": "a } inside a string", "n": 2}),
        ("no json here", None),
        ("", None),
        ('{"unterminated": ', None),
    ],
)
def test_parse_json_reads_tolerantly_but_never_guesses(text: str, expected: Any) -> None:
    assert parse_json(text) == expected


def _yes_no(data: Any) -> tuple[Any, str]:
    verdict = str(data.get("verdict", "")).lower() if isinstance(data, dict) else ""
    return (verdict, "") if verdict in ("yes", "no") else (None, "verdict must be yes or no")


def test_an_unreadable_answer_is_reasked_with_the_reason_then_accepted() -> None:
    answers = iter(["I think yes", '{"verdict": "maybe"}', '{"verdict": "Yes"}'])
    judge = scripted_llm(lambda messages, options: next(answers), role="judge")
    usage = Usage()
    answer = ask_json(
        judge, [Message("user", "Is it true?")], _yes_no, usage, purpose="t", max_attempts=3
    )
    assert answer.value == "yes" and answer.parsed
    assert (usage.calls, usage.reasks, usage.unparsed) == (3, 2, 0)
    calls = calls_of(judge)
    assert [options["sample"] for _, options in calls] == [0, 1, 2]
    assert "no JSON object" in calls[1][0][-1].content
    assert "verdict must be yes or no" in calls[2][0][-1].content


def test_an_answer_unreadable_after_max_attempts_is_counted_not_scored() -> None:
    judge = scripted_llm(lambda messages, options: "always prose", role="judge")
    usage = Usage()
    answer = ask_json(
        judge, [Message("user", "Is it true?")], _yes_no, usage, purpose="t", max_attempts=2
    )
    assert answer.value is None and not answer.parsed
    assert answer.raw == "always prose" and "no JSON" in answer.error
    assert (usage.calls, usage.unparsed) == (2, 1)


def test_as_list_accepts_a_bare_list_or_one_under_a_named_key() -> None:
    assert as_list([1, 2], "claims") == [1, 2]
    assert as_list({"Claims": [3]}, "claims") == [3]
    assert as_list({"other": [3]}, "claims") is None
