"""Checks of a judge's questions, answers and scores: ``runner.api.questions``.

Part of the plugin API (versioned with ``runner.api``); what the coverage metric accepts
from the judge: its question list, the summary's answer, the score. Each checker turns a
parsed JSON answer into a value, or says in one line what was wrong, so the judge can be
asked again (``runner.api.asking.Asker``).
"""

from __future__ import annotations

from typing import Any

from runner.api.asking import as_text
from runner.api.judging import as_list, as_number, key_of

IDK = {"idk", "i don't know", "i do not know", "unknown"}
"""The "cannot be found in the summary" answer, in its usual spellings."""


def is_idk(answer: str) -> bool:
    """True for the "cannot be found in the summary" answer, in its usual spellings."""
    return answer.strip().lower().strip(" .!'\"") in IDK


def check_questions(data: Any) -> tuple[Any, str]:
    """[(question, reference answer, importance 1-5), ...] from a 'questions' list."""
    items = as_list(data, "questions")
    if not items:
        return None, "expected a JSON object with the key 'questions' holding a non-empty list"
    out = []
    for item in items:
        question = as_text(key_of(item, "question"))
        answer = as_text(key_of(item, "answer", "reference_answer", "original_answer"))
        importance = as_number(key_of(item, "importance"))
        if not (question and answer and importance in (1, 2, 3, 4, 5)):
            return (
                None,
                "each question needs 'question', 'answer' and 'importance' (a whole number 1-5)",
            )
        out.append((question, answer, int(importance)))
    return out, ""


def check_answer(data: Any) -> tuple[Any, str]:
    """The summary's answer text ('idk' included)."""
    answer = as_text(key_of(data, "answer", "summary_answer"))
    return (answer, "") if answer else (None, "expected a JSON object with a non-empty 'answer'")


def check_score(data: Any) -> tuple[Any, str]:
    """(score 0-5, reason); a 'verdicts' list as in the article's batched form gives its first."""
    verdicts = as_list(data, "verdicts")
    item = verdicts[0] if verdicts else data
    score = as_number(key_of(item, "score"))
    if score is None or not 0 <= score <= 5:
        return None, "'score' must be a number from 0 to 5"
    return (float(score), as_text(key_of(item, "reason"))), ""
