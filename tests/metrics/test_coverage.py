"""Coverage with a reasonable scripted judge: cut summaries, idk answers, long sources, caching."""

from __future__ import annotations

import inspect
import json
import re
import threading
from pathlib import Path

import pytest
import yaml

from metrics import coverage
from metrics.coverage import allocate
from runner.api.chunking import split_into_chunks
from runner.api.errors import ConfigError
from runner.api.types import Document, Message
from runner.llm.cache import ResponseCache
from tests.helpers.scripted_llm import calls_of, scripted_llm
from tests.metrics.article_judge import SENTENCES, SOURCE, reasonable
from tests.metrics.conftest import REPO
from tests.metrics.test_alignment import long_source

DOC = Document("bakery", SOURCE)


def judge(concurrency: int = 8, context_window: int = 8192, script=reasonable, cache=None):  # type: ignore[no-untyped-def]
    return scripted_llm(
        script,
        context_window=context_window,
        concurrency=concurrency,
        name="claude-scripted",
        role="judge",
        cache=cache,
    )


def purposes(gateway) -> list[str]:  # type: ignore[no-untyped-def]
    return [options["purpose"] for _, options in calls_of(gateway)]


def test_the_whole_source_as_summary_covers_everything() -> None:
    result = coverage.setup(judge(), n_questions=6).score(DOC, SOURCE)
    v = result.values
    assert (v["coverage"], v["coverage_weighted"], v["questions"], v["idk_answers"]) == (
        1.0,
        1.0,
        6,
        0,
    )
    rows = result.artifacts["coverage.json"]
    assert [r["reference_answer"] for r in rows] == SENTENCES
    assert set(rows[0]) >= {
        "question",
        "reference_answer",
        "importance",
        "chunk",
        "summary_answer",
        "score",
    }


def test_a_summary_cut_to_its_first_sentence_covers_less_and_idk_costs_no_call() -> None:
    gateway = judge()
    v = coverage.setup(gateway, n_questions=6).score(DOC, SENTENCES[0]).values
    assert v["coverage"] == pytest.approx(1 / 6)
    assert v["coverage_weighted"] == pytest.approx(
        5 / (5 + 5 * 2)
    )  # importance 5 answered, 2 x 5 not
    assert v["idk_answers"] == 5
    assert purposes(gateway).count("coverage.score") == 1  # only the answered question was scored
    assert purposes(gateway).count("coverage.answer") == 6 and v["judge_calls"] == 8


def test_a_partial_answer_gets_a_partial_score() -> None:
    summary = "The bakery sold rye bread."  # half of sentence 2's words
    result = coverage.setup(judge(), n_questions=6).score(DOC, summary)
    row = result.artifacts["coverage.json"][1]
    assert row["summary_answer"] == summary and 0 < row["score"] < 5
    assert result.values["coverage"] == pytest.approx(row["score"] / 5 / 6)


def test_answer_prompt_puts_the_summary_in_the_cached_prefix_and_the_question_last() -> None:
    gateway = judge()
    coverage.setup(gateway, n_questions=2).score(DOC, SOURCE)
    calls = calls_of(gateway)
    answer = next(m for m, o in calls if o["purpose"] == "coverage.answer")
    assert answer[0].cache and answer[0].content.endswith("Text:\n" + SOURCE)
    assert answer[1].content.startswith("Question:\nWhat is said about")
    score = next(m for m, o in calls if o["purpose"] == "coverage.score")
    assert (
        len(score) == 1 and "Give a score from 0 to 5" in score[0].content
    )  # nothing long to share
    pair = score[0].content.rsplit("\n\n", 2)[-2]
    assert json.loads(pair) == {"original_answer": SENTENCES[0], "summary_answer": SENTENCES[0]}


def test_allocation_is_proportional_with_largest_remainders() -> None:
    assert allocate(10, [100, 300, 600]) == [1, 3, 6]
    assert allocate(10, [1, 1, 1]) == [4, 3, 3]  # ties: the earlier chunk first
    assert allocate(10, [298, 298, 298, 50]) == [3, 3, 3, 1]
    assert allocate(3, [10, 10, 10, 10, 10]) == [1, 1, 1, 0, 0]
    assert allocate(5, [0, 0]) == [3, 2] and allocate(4, []) == []
    assert sum(allocate(7, [5, 11, 13])) == 7


def test_a_long_source_spreads_the_questions_over_its_chunks() -> None:
    source = long_source(9)  # four chunks of two paragraphs, one of one
    gateway = judge(context_window=1500)
    metric = coverage.setup(gateway, max_tokens=200, room_tokens=100)
    result = metric.score(Document("long", source), source)
    chunks = split_into_chunks(source, metric.budget)
    assert len(chunks) > 2
    expected = allocate(10, [c.n_tokens for c in chunks])
    assert expected == [2, 2, 2, 3, 1]  # chunk 3 is one token longer: the largest remainder
    rows = result.artifacts["coverage.json"]
    assert [sum(r["chunk"] == c.index for r in rows) for c in chunks] == expected
    for row in rows:
        assert row["reference_answer"] in chunks[row["chunk"]].text
    asked = {  # chunk shown -> n asked, whatever order the concurrent calls finished in
        next(c.index for c in chunks if c.text.strip() in m[0].content): int(
            re.search(r"list of (\d+) questions", m[0].content).group(1)
        )  # type: ignore[union-attr]
        for m, o in calls_of(gateway)
        if o["purpose"] == "coverage.questions"
    }
    assert asked == {c.index: n for c, n in zip(chunks, expected, strict=True) if n}
    assert result.values["questions"] == 10 and result.values["coverage"] == 1.0


def test_questions_are_generated_once_and_identical_across_summaries(tmp_path: Path) -> None:
    gateway = judge(cache=ResponseCache(tmp_path))
    metric = coverage.setup(gateway, n_questions=6)
    first = metric.score(DOC, SOURCE).artifacts["coverage.json"]
    second = metric.score(DOC, SENTENCES[0]).artifacts["coverage.json"]
    assert [r["question"] for r in first] == [r["question"] for r in second]
    generated = [e for e in gateway.call_log.entries if e["purpose"] == "coverage.questions"]
    assert [e["cached"] for e in generated] == [False, True]


def test_an_unparsable_score_is_counted_and_excluded() -> None:
    def script(messages: list[Message], options: dict) -> str:
        if options["purpose"] == "coverage.score" and "fire" in messages[0].content:
            return '{"score": "excellent"}'
        return reasonable(messages, options)

    result = coverage.setup(judge(script=script), n_questions=6, max_attempts=2).score(DOC, SOURCE)
    v = result.values
    assert (v["questions"], v["unparsed_questions"], v["coverage"]) == (6, 1, 1.0)
    assert v["judge_unparsed"] == 1 and v["judge_reasks"] == 1
    bad = [r for r in result.artifacts["coverage.json"] if r["score"] is None]
    assert len(bad) == 1 and bad[0]["unparsed"] and "'score'" in bad[0]["error"] and result.notes


def test_unreadable_questions_give_nan_and_count_the_allocated_ones() -> None:
    result = coverage.setup(judge(script=lambda m, o: "[]"), n_questions=4).score(DOC, SOURCE)
    v = result.values
    assert (
        v["coverage"] != v["coverage"] and v["judge_calls"] == 3 and "4 unparsed" in result.notes[0]
    )


def test_answers_overlap_with_concurrency_eight() -> None:
    barrier = threading.Barrier(5, timeout=5)

    def script(messages: list[Message], options: dict) -> str:
        if options["purpose"] == "coverage.answer" and "marta vance" not in messages[1].content:
            barrier.wait()  # the five later questions in flight at once, or this times out
        return reasonable(messages, options)

    assert (
        coverage.setup(judge(script=script), n_questions=6).score(DOC, SOURCE).values["coverage"]
        == 1.0
    )


def test_a_questions_prompt_without_n_is_a_config_error(tmp_path: Path) -> None:
    prompt = tmp_path / "questions.txt"
    prompt.write_text("Ask questions about:\n{text}\n")
    with pytest.raises(ConfigError, match=r"questions.txt lacks the slot \{n\}"):
        coverage.setup(judge(), questions_prompt_path=str(prompt))
    prompt.write_text("Ask {n} questions about {text} and {extra}\n")
    with pytest.raises(ConfigError, match=r"unknown slot \{extra\}"):
        coverage.setup(judge(), questions_prompt_path=str(prompt))
    with pytest.raises(ConfigError, match="metrics.coverage.score_prompt_path"):
        coverage.setup(judge(), score_prompt_path=str(tmp_path / "missing.txt"))


@pytest.mark.parametrize(
    ("key", "value"), [("n_questions", 0), ("max_attempts", 0), ("temperature", 3.0)]
)
def test_bad_settings_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"metrics.coverage.{key}"):
        coverage.setup(judge(), **{key: value})  # type: ignore[arg-type]


def test_yaml_matches_setup_defaults() -> None:
    data = yaml.safe_load((REPO / "conf" / "metrics" / "coverage.yaml").read_text())["coverage"]
    signature = inspect.signature(coverage.setup)
    assert data == {
        k: p.default for k, p in signature.parameters.items() if p.kind == p.KEYWORD_ONLY
    }
    assert coverage.Coverage.headline == ("coverage", "coverage_weighted")
