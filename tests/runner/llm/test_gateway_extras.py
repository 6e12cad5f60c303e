"""The gateway's embeddings and top_logprobs, against the loopback OpenAI server."""

from __future__ import annotations

import math

from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply, letter_embedder


def _gateway(
    url: str, cache: ResponseCache | None, model: str = "openai/fake", role: str = "embedder"
) -> Gateway:
    spec = ModelSpec(
        name="fake",
        model=model,
        api_base=url,
        context_window=8192,
        retry=RetryPolicy(max_attempts=1),
    )
    return Gateway(spec, CallLog(None, keep=True), cache, role=role)


def test_embeddings_come_back_in_order_and_are_cached_per_text(tmp_path) -> None:
    with FakeOpenAIServer() as server:
        gateway = _gateway(server.url, ResponseCache(tmp_path))
        texts = ["Alpha beta.", "Zebra zoo.", "Alpha beta."]
        vectors = gateway.embed(texts, purpose="coherence")
        assert vectors == [letter_embedder(t) for t in texts]
        assert len(server.requests) == 1 and server.requests[0]["input"] == [
            "Alpha beta.",
            "Zebra zoo.",
        ]
        again = gateway.embed(["Zebra zoo.", "New text."])
        assert again == [letter_embedder("Zebra zoo."), letter_embedder("New text.")]
        assert server.requests[-1]["input"] == ["New text."]  # the cached text is not sent again
        assert len(server.requests) == 2
    purposes = [e["purpose"] for e in gateway.call_log.entries]
    assert "coherence" in purposes
    assert all(
        "embedding" not in str(e["response"]) or e["response"].startswith("<")
        for e in gateway.call_log.entries
    )


def test_top_logprobs_are_returned_and_cached(tmp_path) -> None:
    alternatives = [{"4": math.log(0.6), "5": math.log(0.3), "3": math.log(0.1)}]
    with FakeOpenAIServer(lambda request: FakeReply(text="4", top_logprobs=alternatives)) as server:
        gateway = _gateway(server.url, ResponseCache(tmp_path), role="judge")
        first = gateway.complete("Rate it.", top_logprobs=5, max_tokens=2)
        assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 5
        second = gateway.complete("Rate it.", top_logprobs=5, max_tokens=2)
        assert len(server.requests) == 1 and second.cached
    for completion in (first, second):
        assert completion.text == "4"
        assert completion.top_logprobs[0] == {k: v for k, v in alternatives[0].items()}


def test_a_request_without_top_logprobs_does_not_ask_for_them(tmp_path) -> None:
    with FakeOpenAIServer() as server:
        _gateway(server.url, None, role="judge").complete("Hello there.", max_tokens=5)
        assert "logprobs" not in server.requests[0]


def test_each_sample_gets_its_own_seed_so_samples_can_differ() -> None:
    with FakeOpenAIServer() as server:
        gateway = _gateway(server.url, None, role="judge")
        gateway.seed = 0
        for sample in range(4):
            gateway.complete("Rate it.", sample=sample, max_tokens=2)
    seeds = [r["seed"] for r in server.requests]
    assert seeds[0] == 0  # sample 0 keeps the run's seed (earlier cache entries stay valid)
    assert len(set(seeds)) == 4


def test_repeat_penalty_enters_the_request_only_when_the_model_sets_one() -> None:
    with FakeOpenAIServer() as server:
        plain = _gateway(server.url, None, role="model")
        plain.complete("Hello.", max_tokens=3)
        spec = ModelSpec(
            name="p",
            model="openai/fake",
            api_base=server.url,
            context_window=8192,
            repeat_penalty=1.1,
        )
        penalized = Gateway(spec, CallLog(None, keep=True), None)
        penalized.complete("Hello.", max_tokens=3)
    assert (
        "repeat_penalty" not in plain.call_log.entries[0]["request"]
    )  # cache keys of other models unchanged
    assert penalized.call_log.entries[0]["request"]["repeat_penalty"] == 1.1


def test_embedder_rpm_spaces_the_embedding_requests(tmp_path) -> None:
    """embedder.rpm is not accepted and then ignored: embedding calls wait for the limiter."""
    import dataclasses
    import time

    with FakeOpenAIServer() as server:
        free = _gateway(server.url, None)
        free.embed(["Warm-up."])  # litellm's import is not the limiter's wait
        start = time.perf_counter()
        for text in ("One.", "Two.", "Three."):
            free.embed([text])
        unlimited = time.perf_counter() - start
        spec = dataclasses.replace(free.spec, rpm=60)  # one request a second
        limited = Gateway(spec, CallLog(None, keep=True), None, role="embedder")
        start = time.perf_counter()
        for text in ("Four.", "Five.", "Six."):
            limited.embed([text])
        waited = time.perf_counter() - start
    assert len(server.requests) == 7
    assert unlimited < 1.0 and waited >= 1.8, (unlimited, waited)
