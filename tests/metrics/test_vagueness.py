"""Sentence vagueness with a scripted judge that applies the article's rule."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from metrics import vagueness
from metrics.vagueness import batch_check, setup
from runner.api.errors import ConfigError
from runner.api.types import Message
from tests.helpers.scripted_llm import calls_of, scripted_llm

SUMMARY = (
    "The article discusses several important topics. "
    "Tesla cut Model Y prices in China by 20% in January 2023. "
    "The author describes the reasons for the price cut. "
    "Deliveries in China rose to 94,000 cars that quarter."
)
VAGUE_PHRASES = (
    "the article",
    "the author describes",
    "the text discusses",
    "this summary describes",
)


def numbered(messages: list[Message]) -> dict[int, str]:
    """The numbered sentences between INPUT: and OUTPUT: of a request (its first message;
    a re-ask adds the failed answer and a request to fix it)."""
    block = messages[0].content.split("INPUT:\n", 1)[1].rsplit("\n\nOUTPUT:", 1)[0]
    return {int(n): s for n, s in re.findall(r"^(\d+)\. (.*)$", block, flags=re.MULTILINE)}


def rule_judge(skip: frozenset[str] = frozenset(), skip_times: int = 99) -> Any:
    """A judge that applies the article's rule: a sentence that talks about the text is vague.

    Sentences containing any of ``skip`` are left out of the first ``skip_times`` answers.
    """
    seen: dict[str, int] = {}

    def script(messages: list[Message], options: dict[str, Any]) -> str:
        entries = []
        for number, sentence in numbered(messages).items():
            if any(s in sentence for s in skip):
                seen[sentence] = seen.get(sentence, 0) + 1
                if seen[sentence] <= skip_times:
                    continue
            vague = any(p in sentence.lower() for p in VAGUE_PHRASES)
            reason = "talks about the text" if vague else "states a concrete point"
            entries.append({"sentence_id": number, "is_vague": vague, "reason": reason})
        return json.dumps({"sentences": entries})

    return script


def test_stock_phrases_are_vague_and_concrete_sentences_are_not() -> None:
    judge = scripted_llm(rule_judge(), role="judge")
    result = setup(judge).score(None, SUMMARY)
    v = result.values
    assert v["vague_share"] == pytest.approx(2 / 4)
    assert (v["vague_sentences"], v["judged_sentences"], v["sentences"]) == (2, 4, 4)
    assert v["unparsed_sentences"] == 0 and v["judge_calls"] == 1  # all in one call
    rows = result.artifacts["vagueness.json"]
    assert [r["is_vague"] for r in rows] == [True, False, True, False]
    assert rows[0] == {
        "sentence": "The article discusses several important topics.",
        "is_vague": True,
        "reason": "talks about the text",
    }
    request, options = calls_of(judge)[0]
    assert (
        "'the article suggests', 'the author describes', 'the text discusses'" in request[0].content
    )
    assert options["temperature"] == judge.temperature == 0.5  # the judge's own
    assert result.notes == ()


def test_a_concrete_summary_has_no_vague_sentence() -> None:
    concrete = "Tesla cut prices by 20%. Deliveries rose to 94,000 cars."
    result = setup(scripted_llm(rule_judge(), role="judge")).score(None, concrete)
    assert result.values["vague_share"] == 0.0


def test_missing_sentences_are_asked_again_alone() -> None:
    judge = scripted_llm(rule_judge(frozenset({"author"}), skip_times=1), role="judge")
    result = setup(judge).score(None, SUMMARY)
    assert result.values["vague_share"] == pytest.approx(0.5)
    assert result.values["unparsed_sentences"] == 0
    calls = calls_of(judge)
    assert len(calls) == 2 and result.values["judge_reasks"] == 1
    assert numbered(calls[1][0]) == {1: "The author describes the reasons for the price cut."}
    assert calls[0][1]["sample"] != calls[1][1]["sample"]


def test_sentences_never_answered_are_counted_unparsed_not_scored() -> None:
    judge = scripted_llm(rule_judge(frozenset({"author"})), role="judge")
    result = setup(judge, max_attempts=3).score(None, SUMMARY)
    v = result.values
    assert v["unparsed_sentences"] == 1 and v["judged_sentences"] == 3
    assert v["vague_share"] == pytest.approx(1 / 3)  # 1 vague of the 3 judged
    assert v["judge_calls"] == 3  # bounded: max_attempts calls for the batch
    row = result.artifacts["vagueness.json"][2]
    assert row["is_vague"] is None and row["unparsed"] is True
    assert any("1 of 4 sentences unparsed" in n for n in result.notes)


def test_unreadable_answers_leave_every_sentence_unparsed() -> None:
    judge = scripted_llm(lambda m, o: "I think they are fine.", role="judge")
    result = setup(judge, max_attempts=2).score(None, SUMMARY)
    assert math.isnan(result.values["vague_share"])
    assert result.values["unparsed_sentences"] == 4 and result.values["judge_calls"] == 2
    assert any("vague_share is NaN" in n for n in result.notes)


def test_batches_are_separate_calls_with_their_own_numbering() -> None:
    judge = scripted_llm(rule_judge(), role="judge", concurrency=2)
    result = setup(judge, batch_size=3).score(None, SUMMARY)
    assert result.values["vague_share"] == pytest.approx(0.5)
    assert sorted(len(numbered(m)) for m, _ in calls_of(judge)) == [1, 3]


def test_check_accepts_models_spellings_and_rejects_empty_answers() -> None:
    check = batch_check(2)
    value, _ = check([{"ID": "1.", "Is_Vague": "yes"}, {"sentence_id": 2, "is_vague": 0}])
    assert {n: v.is_vague for n, v in value.items()} == {1: True, 2: False}
    assert check({"sentences": [{"sentence_id": 3, "is_vague": True}]})[0] is None
    assert check({"answer": "none"})[0] is None


def test_no_sentences_is_nan_without_calls() -> None:
    judge = scripted_llm(rule_judge(), role="judge")
    result = setup(judge).score(None, "   ")
    assert math.isnan(result.values["vague_share"]) and calls_of(judge) == []


def test_prompt_files_are_checked_for_their_slot(tmp_path: Path) -> None:
    judge = scripted_llm(rule_judge(), role="judge")
    bad = tmp_path / "vague.txt"
    bad.write_text("Which of these are vague?\n{summary}")
    with pytest.raises(ConfigError, match=r"vague\.txt: unknown slot \{summary\}"):
        setup(judge, prompt_path=str(bad))
    bad.write_text("Which of these are vague?")
    with pytest.raises(ConfigError, match=r"vague\.txt lacks the slot \{sentences\}"):
        setup(judge, prompt_path=str(bad))
    with pytest.raises(ConfigError, match="batch_size=-1"):
        setup(judge, batch_size=-1)
    assert vagueness.ROLES == ("judge",) and vagueness.Vagueness.headline == ("vague_share",)
