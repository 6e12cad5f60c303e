"""strategy=incremental: word targets, compression and its fallback, chunk-size range;
unit tests with the scripted model, trace checks through the real gateway."""

from __future__ import annotations

from typing import Any

import pytest

from runner.api.budgets import count_words
from runner.api.chunking import split_into_chunks
from runner.api.errors import ConfigError
from runner.api.text import count_tokens
from runner.api.types import Chunk
from runner.data.loaders import load_documents
from strategies import incremental
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.scripted_llm import calls_of
from tests.strategies.conftest import (
    book_text,
    check_incremental,
    chunks_of,
    compress_target,
    echo_summary,
    gateway,
    kind_of,
    responder,
    scripted,
    steps,
    text_of,
    well_behaved,
    words_of,
)


def overlong_updates(kind: str, prompt: str, request: dict[str, Any]) -> str:
    """Running summaries that always overflow the budget; compressions that behave."""
    if kind in ("init", "update"):
        return text_of(int(request["max_tokens"] * 1.4))
    return well_behaved(kind, prompt, request)


def test_word_targets_grow_with_the_share_read_up_to_the_final_limit() -> None:
    chunks = chunks_of([1000, 1000, 500, 2500])
    assert incremental.word_targets(chunks, 585) == [
        round(585 * r / sum(c.n_tokens for c in chunks))
        for r in (
            chunks[0].n_tokens,
            sum(c.n_tokens for c in chunks[:2]),
            sum(c.n_tokens for c in chunks[:3]),
            sum(c.n_tokens for c in chunks),
        )
    ]
    assert incremental.word_targets(chunks, 585)[-1] == 585


def test_prompts_carry_the_chunk_the_running_summary_and_the_target() -> None:
    llm = scripted()
    chunks = chunks_of([400, 400, 400])
    result = incremental.summarize(chunks, llm, postprocess="none")
    prompts = [m[-1].content for m, _ in calls_of(llm)]
    targets = incremental.word_targets(chunks, 585)
    assert prompts[0].startswith("Below is the beginning part of a story:")
    assert prompts[0].endswith(f"Summary ({targets[0]} words):")
    updates = steps(result, "update")
    for i in (1, 2):
        assert chunks[i].text.strip() in prompts[i] and updates[i - 1]["text"] in prompts[i]
        assert prompts[i].endswith(f"Updated summary ({targets[i]} words):")
    assert result.summary == updates[-1]["text"] and result.counters["compressions"] == 0


def test_overflowing_summary_is_compressed_at_temperature_1_within_tolerance() -> None:
    llm = scripted(overlong_updates)
    chunks = chunks_of([400] * 5)
    result = incremental.summarize(chunks, llm, postprocess="none")
    compressions = steps(result, "compress")
    assert len(compressions) == 5 == result.counters["compressions"]
    for c in compressions:
        assert c["before_tokens"] > 900 >= c["after_tokens"] and c["attempts"] == 1
        assert 0.8 * c["target_words"] <= c["after_words"] <= 1.2 * c["target_words"]
    options = [o for m, o in calls_of(llm) if kind_of(m[-1].content) == "compress"]
    assert all(o["temperature"] == 1.0 and o["sample"] == 1 for o in options)
    check_incremental(result, 5, 900)


def test_compression_out_of_tolerance_retries_then_keeps_the_closest() -> None:
    def far_off(kind: str, prompt: str, request: dict[str, Any]) -> str:
        if kind == "compress":
            target = compress_target(prompt)
            return words_of(round(target * (1.3 + 0.1 * request["sample"])))  # 1.4x, 1.5x, ...
        return overlong_updates(kind, prompt, request)

    llm = scripted(far_off)
    result = incremental.summarize(chunks_of([400] * 3), llm, max_attempts=3, postprocess="none")
    compressions = steps(result, "compress")
    assert all(c["attempts"] == 3 and c["fallback"] for c in compressions)
    assert result.counters["fallbacks"] == 3 and result.counters["compression_calls"] == 9
    for c in compressions:
        assert c["after_words"] == min(c["attempt_words"], key=lambda w: abs(w - c["target_words"]))
    check_incremental(result, 3, 900)


def test_compression_never_valid_still_ends_within_budget() -> None:
    def hopeless(kind: str, prompt: str, request: dict[str, Any]) -> str:
        if kind == "postprocess":
            return echo_summary(prompt)
        return text_of(2000, terminated=False)

    result = incremental.summarize(chunks_of([400] * 3), scripted(hopeless), max_attempts=2)
    running = check_incremental(result, 3, 900)
    assert all(count_tokens(t) <= 900 for t in running) and count_tokens(result.summary) <= 900


def test_chunk_up_to_window_minus_budgets_works_and_beyond_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"lower chunk \(at most \d+\)") as raised:
        incremental.summarize(chunks_of([400, 3500]), scripted(context_window=4096))
    largest = int(str(raised.value).split("at most ")[1].split(")")[0])
    assert largest > 1000
    result = incremental.summarize(chunks_of([largest, largest]), scripted(context_window=4096))
    check_incremental(result, 2, 900)


def test_unknown_postprocess_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="strategy.postprocess=tidy is unknown"):
        incremental.summarize(chunks_of([400]), scripted(), postprocess="tidy")


# --- through the real gateway against the loopback server ----------------------------


def test_incremental_on_the_book_compresses_and_stays_within_budget() -> None:
    chunks = split_into_chunks(book_text(), 2048)
    with FakeOpenAIServer(responder(overlong_updates)) as server:
        result = incremental.summarize(chunks, gateway(server.url))
        compress_requests = [
            r for r in server.requests if kind_of(r["messages"][-1]["content"]) == "compress"
        ]
    running = check_incremental(result, len(chunks), 900)
    assert result.counters["compressions"] == len(chunks) == len(compress_requests)
    assert all(r["temperature"] == 1.0 for r in compress_requests)
    assert count_words(running[-1]) == pytest.approx(585, rel=0.2)
    assert result.counters["calls"] == len(server.requests)


def test_unterminated_update_triggers_compression_through_the_gateway() -> None:
    def unterminated(kind: str, prompt: str, request: dict[str, Any]) -> str:
        if kind == "update":
            return text_of(200, terminated=False)
        return well_behaved(kind, prompt, request)

    chunks = split_into_chunks(load_documents("sample")[0].text, 1024)
    with FakeOpenAIServer(responder(unterminated)) as server:
        result = incremental.summarize(chunks, gateway(server.url))
    assert result.counters["compressions"] == len(chunks) - 1
    check_incremental(result, len(chunks), 900)


def test_one_chunk_for_the_whole_book() -> None:
    """The paper's 88K setting: the whole book in one chunk, one call, when the window allows."""
    text = book_text()
    chunks = [
        Chunk(0, text, count_tokens(text))
    ]  # what chunk=60000 gives (the chunker is slow there)
    with FakeOpenAIServer(responder()) as server:
        result = incremental.summarize(chunks, gateway(server.url, context_window=100_000))
        first = server.requests[0]["messages"][-1]["content"]
    assert text.strip() in first and len(steps(result, "update")) == 1
    assert result.counters["calls"] == 2  # the update and the clean-up
    check_incremental(result, 1, 900)


@pytest.mark.parametrize("chunk", [512, 2048])
def test_incremental_on_the_sample_through_the_gateway(chunk: int) -> None:
    with FakeOpenAIServer(responder()) as server:
        llm = gateway(server.url)
        for doc in load_documents("sample"):
            chunks = split_into_chunks(doc.text, chunk)
            check_incremental(incremental.summarize(chunks, llm), len(chunks), 900)
