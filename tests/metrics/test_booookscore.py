"""BooookScore with a scripted judge: prompt layout, re-asks, batching, aggregation."""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path

import pytest

from metrics import booookscore
from metrics.booookscore import score
from metrics.booookscore.parse import LABELS
from metrics.booookscore.prompt import SENTENCE_PROMPT, parse_template
from runner.api.errors import AuthError, ConfigError, ContextWindowError
from runner.api.types import Message
from runner.llm.gateway import Gateway
from tests.helpers.plugins import built_ins
from tests.helpers.scripted_llm import calls_of, scripted_llm

SUMMARY = (
    "Proctor Bennett, a ferryman in Prospera, assists people transitioning to new lives. "
    "His wife Elise suggests a change in his work. "
    "Deciding to quit being a ferryman, Proctor teaches Caeli how to swim. "
    "Elise suggests a change in his work."
)

METRICS = built_ins("metrics")
SENTENCES = [
    "Proctor Bennett, a ferryman in Prospera, assists people transitioning to new lives.",
    "His wife Elise suggests a change in his work.",
    "Deciding to quit being a ferryman, Proctor teaches Caeli how to swim.",
    "Elise suggests a change in his work.",
]
ANSWERS = {
    SENTENCES[0]: "Questions: Where or what is Prospera?\nTypes: entity omission",
    SENTENCES[1]: "Questions: no confusion\nTypes: no confusion",
    SENTENCES[
        2
    ]: "Questions: How does quitting relate to swimming?\nTypes: discontinuity, causal omission",
    SENTENCES[3]: "Questions: Didn't we hear this already?\nTypes: duplication",
}
CLEAN = "Questions: no confusion\nTypes: no confusion"


def target(messages: list[Message]) -> str:
    """The sentence a per-sentence request asks about (between the M.4 markers)."""
    found = re.search(
        r"\[Your sentence\]\n(.*?)\n\[Your response\]", messages[1].content, re.DOTALL
    )
    assert found, messages[1].content
    return found.group(1)


def paper_judge(concurrency: int = 1) -> Gateway:
    """A scripted judge named like Claude, so the gateway sends cache marks as cache_control."""
    return scripted_llm(
        lambda messages, _: ANSWERS[target(messages)],
        concurrency=concurrency,
        name="claude-scripted",
    )


def test_registered_as_a_judged_metric() -> None:
    assert METRICS["booookscore"] is booookscore
    assert booookscore.ROLES == ("judge",)


def test_score_types_and_artifact() -> None:
    result = score(None, SUMMARY, paper_judge())
    v = result.values
    assert v["score"] == pytest.approx(25.0)  # 1 of 4 sentences clean
    assert (
        v["sentences"],
        v["judged_sentences"],
        v["confused_sentences"],
        v["unparsed_sentences"],
    ) == (4, 4, 3, 0)
    assert v["type/entity_omission"] == pytest.approx(25.0)
    assert v["type/causal_omission"] == pytest.approx(25.0)
    assert v["type/discontinuity"] == pytest.approx(25.0)
    assert v["type/duplication"] == pytest.approx(25.0)
    assert v["type/language"] == 0.0
    assert {k for k in v if k.startswith("type/")} == {
        "type/" + t.replace(" ", "_") for t in LABELS
    }
    assert v["judge_calls"] == 4 and v["judge_reasks"] == 0
    assert v["judge_prompt_tokens"] > 4 * 1000
    annotations = result.artifacts["annotations.json"]
    assert list(annotations) == SENTENCES
    assert annotations[SENTENCES[1]] == {"questions": None, "types": None}
    assert annotations[SENTENCES[2]] == {
        "questions": "How does quitting relate to swimming?",
        "types": ["discontinuity", "causal omission"],
    }
    json.dumps(result.artifacts)  # serialisable, as the runner writes it
    assert result.notes == ()


def test_prompt_layout_shared_prefix_first_sentence_last() -> None:
    judge = paper_judge()
    score(None, SUMMARY, judge)
    prefixes = {msgs[0].content for msgs, _ in calls_of(judge)}
    assert len(prefixes) == 1  # byte-identical shared part for every sentence
    first, last = calls_of(judge)[0][0]
    assert first.cache and not last.cache and first.role == last.role == "user"
    assert first.content.endswith("[Your summary]\n" + SUMMARY)
    assert "Types of confusion include the following" in first.content
    assert last.content.startswith("[Your sentence]\n" + SENTENCES[0])
    assert [target(m) for m, _ in calls_of(judge)] == SENTENCES  # local judge: in order
    assert all(o["purpose"] == "booookscore" and o["sample"] == 0 for _, o in calls_of(judge))


def test_full_prompt_is_the_template_filled_in_order() -> None:
    judge = paper_judge()
    score(None, SUMMARY, judge)
    template = SENTENCE_PROMPT.read_text(encoding="utf-8").rstrip("\n")
    first, last = calls_of(judge)[0][0]
    assert first.content + "\n" + last.content == template.format(SUMMARY, SENTENCES[0])


def test_duplicate_sentences_asked_once_counted_each_time() -> None:
    summary = "Anna leaves home. Anna leaves home. She returns."
    judge = scripted_llm(lambda m, _: ANSWERS[SENTENCES[0]] if "leaves" in target(m) else CLEAN)
    result = score(None, summary, judge)
    assert len(calls_of(judge)) == 2
    assert result.values["sentences"] == 3
    assert result.values["score"] == pytest.approx(100 / 3)
    assert list(result.artifacts["annotations.json"]) == ["Anna leaves home.", "She returns."]


def test_unreadable_answer_is_asked_again_with_its_own_cache_slot() -> None:
    replies = iter(
        ["I think it is fine", "Questions: Who?\nTypes: plot hole", ANSWERS[SENTENCES[0]]]
    )
    judge = scripted_llm(lambda m, o: next(replies) if target(m) == SENTENCES[0] else CLEAN)
    result = score(None, SUMMARY, judge, max_attempts=3)
    asks = [(m, o) for m, o in calls_of(judge) if target(m) == SENTENCES[0]]
    assert [o["sample"] for _, o in asks] == [0, 1, 2]
    second = asks[1][0]
    assert second[0] == asks[0][0][0]  # the re-ask keeps the cached prefix
    assert second[2] == Message("assistant", "I think it is fine")
    assert "could not be read" in second[3].content and "no 'Types:' field" in second[3].content
    assert "unknown type 'plot hole'" in asks[2][0][3].content
    assert result.values["judge_reasks"] == 2
    assert result.values["unparsed_sentences"] == 0
    assert result.artifacts["annotations.json"][SENTENCES[0]]["types"] == ["entity omission"]


def test_unparsed_sentences_are_counted_listed_and_excluded() -> None:
    judge = scripted_llm(lambda m, _: "Hmm." if target(m) == SENTENCES[2] else CLEAN)
    result = score(None, SUMMARY, judge, max_attempts=2)
    v = result.values
    assert v["unparsed_sentences"] == 1 and v["judged_sentences"] == 3
    assert v["score"] == pytest.approx(100.0)  # 3 of 3 judged sentences, not 3 of 4
    assert v["judge_calls"] == 5
    entry = result.artifacts["annotations.json"][SENTENCES[2]]
    assert entry["unparsed"] is True and entry["answer"] == "Hmm." and entry["types"] is None
    assert (
        len(result.notes) == 1
        and "1 of 4" in result.notes[0]
        and "Deciding to quit" in result.notes[0]
    )


def test_all_unparsed_gives_nan_not_an_exception() -> None:
    result = score(None, SUMMARY, scripted_llm(lambda m, _: ""), max_attempts=1)
    assert math.isnan(result.values["score"])
    assert math.isnan(result.values["type/salience"])
    assert result.values["unparsed_sentences"] == 4
    assert result.notes


def test_failed_judge_call_is_recorded_as_unparsed() -> None:
    def script(messages: list[Message], _: dict) -> str:
        if target(messages) == SENTENCES[1]:
            raise ContextWindowError("too long")
        return CLEAN

    result = score(None, SUMMARY, scripted_llm(script))
    assert result.values["unparsed_sentences"] == 1
    assert "judge call failed" in result.artifacts["annotations.json"][SENTENCES[1]]["error"]


def test_rejected_key_stops_the_run() -> None:
    def script(messages: list[Message], _: dict) -> str:
        raise AuthError("bad key")

    with pytest.raises(AuthError):
        score(None, SUMMARY, scripted_llm(script))


def test_no_sentences_is_nan_with_a_note() -> None:
    judge = paper_judge()
    result = score(None, "   ", judge)
    assert math.isnan(result.values["score"]) and result.notes and calls_of(judge) == []


@pytest.mark.parametrize("key", ["batch_size", "max_attempts", "max_tokens"])
def test_bad_settings_name_the_key(key: str) -> None:
    with pytest.raises(ConfigError, match=f"metrics.booookscore.{key}"):
        score(None, SUMMARY, paper_judge(), **{key: 0})


def test_remote_judge_runs_sentences_concurrently() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def script(messages: list[Message], _: dict) -> str:
        if target(messages) != SENTENCES[0]:
            barrier.wait()  # three sentences in flight at once, or this times out
        return ANSWERS[target(messages)]

    result = score(None, SUMMARY, scripted_llm(script, concurrency=4))
    assert result.values["score"] == pytest.approx(25.0)
    assert list(result.artifacts["annotations.json"]) == SENTENCES


def test_custom_prompt_path(tmp_path: Path) -> None:
    prompt = tmp_path / "mine.txt"
    prompt.write_text("Rules {{strict}}.\nSUMMARY:\n{}\nSENTENCE:\n{}\nAnswer.\n", encoding="utf-8")
    judge = scripted_llm(lambda m, _: CLEAN)
    result = score(None, SUMMARY, judge, prompt_path=str(prompt))
    first, last = calls_of(judge)[0][0]
    assert first.content == "Rules {strict}.\nSUMMARY:\n" + SUMMARY
    assert last.content == "SENTENCE:\n" + SENTENCES[0] + "\nAnswer."
    assert result.values["score"] == 100.0


@pytest.mark.parametrize(
    "text", ["only {}", "{} {} {}", "{1} then {0}", "{summary} {sentence}", "{} {:>3}"]
)
def test_prompt_needs_two_positional_slots(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_template(text)


def test_missing_prompt_file_names_the_key() -> None:
    with pytest.raises(ConfigError, match="metrics.booookscore.prompt_path"):
        score(None, SUMMARY, paper_judge(), prompt_path="/no/such/prompt.txt")


# ------------------------------------------------------------------ batched mode


def batch_sentences(messages: list[Message]) -> list[str]:
    block = messages[1].content.split("[Your sentences]\n", 1)[1].split("\n[Your response]", 1)[0]
    return [re.sub(r"^\d+\. ", "", line) for line in block.splitlines()]


def batch_reply(sentences: list[str]) -> str:
    items = []
    for n, sentence in enumerate(sentences, start=1):
        q = re.search(r"Questions: (.*)", ANSWERS[sentence]).group(1)  # type: ignore[union-attr]
        t = re.search(r"Types: (.*)", ANSWERS[sentence]).group(1)  # type: ignore[union-attr]
        clean = t == "no confusion"
        items.append(
            {
                "sentence_num": n,
                "sentence": sentence,
                "questions": None if clean else q,
                "types": None if clean else t.split(", "),
            }
        )
    return json.dumps(items)


@pytest.mark.parametrize(("k", "calls"), [(2, 2), (3, 2), (4, 1), (10, 1)])
def test_batched_mode_matches_per_sentence_mode(k: int, calls: int) -> None:
    judge = scripted_llm(lambda m, _: batch_reply(batch_sentences(m)), name="claude-scripted")
    result = score(None, SUMMARY, judge, batch_size=k)
    assert len(calls_of(judge)) == calls
    paper = score(None, SUMMARY, paper_judge())
    for key in ("score", "judged_sentences", "type/duplication", "type/causal_omission"):
        assert result.values[key] == pytest.approx(paper.values[key])
    assert result.artifacts == paper.artifacts
    first, last = calls_of(judge)[0][0]
    assert (
        first.cache and first.content.endswith(SUMMARY) and "[Your sentences]\n1. " in last.content
    )
    assert calls_of(judge)[0][1]["max_tokens"] == 256 * min(k, 4)


def test_batched_mode_asks_again_for_missing_and_mismatched_items() -> None:
    def script(messages: list[Message], options: dict) -> str:
        asked = batch_sentences(messages)
        if options["sample"] == 0:
            items = json.loads(batch_reply(asked))
            items[1]["sentence"] = "A sentence nobody wrote."  # mismatched
            return "Sure:\n" + json.dumps(items[:1] + items[1:2])  # items 3, 4 missing
        return batch_reply(asked)

    judge = scripted_llm(script)
    result = score(None, SUMMARY, judge, batch_size=4)
    assert [batch_sentences(m) for m, _ in calls_of(judge)] == [SENTENCES, SENTENCES[1:]]
    assert [o["sample"] for _, o in calls_of(judge)] == [0, 1]
    assert result.values["score"] == pytest.approx(25.0)
    assert result.values["judge_reasks"] == 1 and result.values["unparsed_sentences"] == 0


def test_batched_mode_gives_up_after_max_attempts() -> None:
    judge = scripted_llm(lambda m, _: "I cannot answer in JSON.")
    result = score(None, SUMMARY, judge, batch_size=2, max_attempts=2)
    assert len(calls_of(judge)) == 4
    assert result.values["unparsed_sentences"] == 4 and math.isnan(result.values["score"])
    assert "no JSON list" in result.artifacts["annotations.json"][SENTENCES[0]]["error"]


def test_a_judge_that_never_or_always_flags_is_warned_about() -> None:
    from metrics.booookscore import constant_judge
    from runner.api.types import MetricResult

    def docs(*pairs: tuple[float, float]) -> dict[str, MetricResult]:
        return {
            f"d{i}": MetricResult({"judged_sentences": j, "confused_sentences": c})
            for i, (j, c) in enumerate(pairs)
        }

    (never,) = constant_judge("local", docs((4, 0), (3, 0)))
    assert never.startswith("judge=local flagged no sentence of 7 judged sentences")
    (always,) = constant_judge("gpt4", docs((4, 4), (3, 3)))
    assert "flagged every sentence of 7" in always
    assert constant_judge("gpt4", docs((4, 1), (3, 0))) == []
    assert constant_judge("gpt4", docs((2, 0), (2, 0))) == []  # too few sentences to tell
