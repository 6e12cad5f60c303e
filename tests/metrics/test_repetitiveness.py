"""Repetitiveness with scripted judges: duplicated sentences flagged, spread of mixed samples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from metrics import repetitiveness
from metrics.repetitiveness import check_verdict, setup
from runner.api.errors import ConfigError
from runner.api.text import split_sentences
from runner.api.types import Message
from tests.helpers.scripted_llm import calls_of, scripted_llm

REPETITIVE = (
    "The council closed the lock in May. A flood had damaged its gates. "
    "The council closed the lock in May. Repairs will cost two million euros."
)
CLEAN = "The council closed the lock in May. A flood had damaged its gates."


def summary_of(messages: list[Message]) -> str:
    """The summary between 'Summary:' and the criteria of a request."""
    text = "\n".join(m.content for m in messages)
    return text.split("Summary:\n\n", 1)[1].split("\n\nEvaluation Criteria:", 1)[0]


def duplicate_judge(messages: list[Message], options: dict[str, Any]) -> str:
    """A judge that calls a summary repetitive when a sentence occurs twice."""
    sentences = split_sentences(summary_of(messages))
    repeated = sorted({s for s in sentences if sentences.count(s) > 1})
    if repeated:
        return json.dumps({"reason": f"repeats: {repeated[0]}", "score": 0})
    return json.dumps({"reason": "no point is repeated", "score": 1})


def test_duplicated_sentences_are_flagged_in_every_sample() -> None:
    judge = scripted_llm(duplicate_judge, role="judge", name="claude-scripted")
    result = setup(judge).score(None, REPETITIVE)
    v = result.values
    assert v["repetitive_share"] == 1.0 and v["repetitiveness_std"] == 0.0
    assert v["samples"] == 5 and v["unparsed_samples"] == 0 and v["judge_calls"] == 5
    records = result.artifacts["repetitiveness.json"]
    assert records[0]["repetitive"] is True and "The council closed" in records[0]["reason"]
    calls = calls_of(judge)
    assert len({o["sample"] for _, o in calls}) == 5
    assert all(o["temperature"] == 1.0 for _, o in calls)
    assert calls[0][0][0].cache and REPETITIVE in calls[0][0][0].content  # summary = shared prefix
    assert "I do not want my summary to contain unnecessary repetitive information." in (
        calls[0][0][1].content
    )


def test_a_summary_without_repetition_is_not_flagged() -> None:
    result = setup(scripted_llm(duplicate_judge, role="judge")).score(None, CLEAN)
    assert result.values["repetitive_share"] == 0.0


VERDICTS = {0: 0, 1: 1, 2: 0, 3: 0, 4: 1}
"""Sample index -> score (0 = repetitive): 3 of 5 repetitive, an unstable judge."""


def mixed_judge(messages: list[Message], options: dict[str, Any]) -> str:
    """Known verdicts per sample; sample 5 answers unreadably on every attempt."""
    index = options["sample"] // 3  # setup's max_attempts=3: sample i asks at 3i, 3i+1, 3i+2
    if index not in VERDICTS:
        return "It is hard to say."
    return json.dumps({"reason": f"sample {index}", "score": VERDICTS[index]})


def test_share_and_spread_of_mixed_samples_leave_unparsed_ones_out() -> None:
    judge = scripted_llm(mixed_judge, role="judge", concurrency=4)
    result = setup(judge, n_samples=6).score(None, REPETITIVE)
    v = result.values
    assert v["repetitive_share"] == pytest.approx(3 / 5)
    assert v["repetitiveness_std"] == pytest.approx(math.sqrt(0.6 * 0.4))  # 0.4899
    assert v["samples"] == 6 and v["unparsed_samples"] == 1
    assert v["judge_calls"] == 5 + 3 and v["judge_reasks"] == 2 and v["judge_unparsed"] == 1
    records = result.artifacts["repetitiveness.json"]
    assert [r["repetitive"] for r in records] == [True, False, True, True, False, None]
    assert records[5]["unparsed"] is True and records[5]["answer"] == "It is hard to say."
    assert any("1 of 6 samples unparsed" in n for n in result.notes)


def test_verdict_check_reads_only_one_or_zero() -> None:
    assert check_verdict({"Score": "0", "Reasoning": "x"}) == ((0, "x"), "")
    assert check_verdict({"score": 1.0})[0] == (1, "")
    assert check_verdict({"score": 7})[0] is None
    assert check_verdict({"score": True})[0] is None  # ambiguous: which way is true?


def test_setup_checks_parameters_and_prompt(tmp_path: Path) -> None:
    judge = scripted_llm(duplicate_judge, role="judge")
    with pytest.raises(ConfigError, match="n_samples=0"):
        setup(judge, n_samples=0)
    with pytest.raises(ConfigError, match="temperature=3"):
        setup(judge, temperature=3)
    bad = tmp_path / "rep.txt"
    bad.write_text("Is {text} repetitive?")
    with pytest.raises(ConfigError, match=r"rep\.txt: unknown slot \{text\}"):
        setup(judge, prompt_path=str(bad))
    result = setup(judge, temperature=None, n_samples=2).score(None, CLEAN)
    assert all(o["temperature"] == 0.5 for _, o in calls_of(judge))  # the judge's own
    assert result.values["samples"] == 2
    assert repetitiveness.ROLES == ("judge",)
    assert repetitiveness.Repetitiveness.headline == ("repetitive_share",)
