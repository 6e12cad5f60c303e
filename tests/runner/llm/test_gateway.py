"""The gateway against a real loopback HTTP server, through litellm's openai provider."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runner.api.errors import AuthError, Cancelled, ConfigError, ModelUnreachableError
from runner.api.types import Message
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway, ModelSpec
from runner.llm.limits import EndpointLimits
from runner.llm.retry import RetryPolicy
from runner.llm.stop import Stop
from runner.run import preflight
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply


def spec(url: str, **kw: Any) -> ModelSpec:
    base = dict(
        name="fake",
        model="openai/fake",
        api_base=url,
        context_window=8192,
        temperature=0.5,
        retry=RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05),
    )
    base.update(kw)
    return ModelSpec(**base)  # type: ignore[arg-type]


def test_call_returns_text_tokens_and_is_logged(tmp_path: Path, server: FakeOpenAIServer) -> None:
    log = CallLog(tmp_path / "calls.jsonl")
    gw = Gateway(spec(server.url), log, seed=3)
    out = gw.complete([Message("user", "Summarize this story about a lighthouse.")], max_tokens=50)
    assert out.text.startswith("Summarize this story")
    assert out.prompt_tokens > 5 and out.completion_tokens > 5 and not out.cached
    sent = server.requests[0]
    assert sent["seed"] == 3 and sent["max_tokens"] == 50 and sent["temperature"] is not None
    line = json.loads((tmp_path / "calls.jsonl").read_text().splitlines()[0])
    assert line["call_id"] == out.call_id and line["prompt_tokens"] == out.prompt_tokens
    assert log.totals.calls == 1 and log.totals.cache_hits == 0


def test_identical_request_is_served_from_cache(tmp_path: Path, server: FakeOpenAIServer) -> None:
    cache = ResponseCache(tmp_path / "cache")
    first = Gateway(spec(server.url), CallLog(None), cache).complete("same prompt")
    log = CallLog(None)
    again = Gateway(spec(server.url), log, cache).complete("same prompt")
    assert len(server.requests) == 1
    assert again.cached and again.text == first.text and again.cost_usd == 0
    assert log.totals.calls == 0 and log.totals.cache_hits == 1
    Gateway(spec(server.url), log, cache).complete("same prompt", sample=1)
    Gateway(spec(server.url), log, cache).complete("same prompt", temperature=1.0)
    assert len(server.requests) == 3  # a new sample index or temperature is a new slot


def test_429_is_retried_honouring_retry_after(tmp_path: Path) -> None:
    answers = [FakeReply(status=429, headers={"Retry-After": "0.4"}), FakeReply(text="fine.")]
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=5.0)
    with FakeOpenAIServer(lambda r: answers.pop(0)) as s:
        out = Gateway(spec(s.url, retry=policy), CallLog(None)).complete("x")
    assert out.text == "fine."
    assert out.latency_s >= 0.4  # waited what the server asked for, not the 10 ms backoff


def test_5xx_is_retried(tmp_path: Path) -> None:
    answers = [FakeReply(status=500), FakeReply(status=503), FakeReply(text="ok.")]
    with FakeOpenAIServer(lambda r: answers.pop(0)) as s:
        assert Gateway(spec(s.url), CallLog(None)).complete("x").text == "ok."
        assert len(s.requests) == 3


def test_401_fails_at_once_and_stops_the_job_s_other_calls() -> None:
    stop = Stop()
    with FakeOpenAIServer(lambda r: FakeReply(status=401, text="bad key")) as s:
        with pytest.raises(AuthError, match="model=fake: the API key was rejected") as caught:
            Gateway(spec(s.url), CallLog(None), cancel=stop).complete("x")
        assert len(s.requests) == 1
        # another role of the same job: it makes no call once the key was rejected
        with pytest.raises(Cancelled, match="judge=fake: the job was stopped"):
            Gateway(spec(s.url), CallLog(None), role="judge", cancel=stop).complete("y")
        assert len(s.requests) == 1
    assert stop.cause is caught.value  # what the run will report, not the Cancelled


def test_404_fails_at_once_without_stopping_the_job() -> None:
    stop = Stop()  # another role may still work: the document fails, and on_error decides
    with FakeOpenAIServer(lambda r: FakeReply(status=404, text="no such model")) as s:
        with pytest.raises(Exception, match="model not found"):
            Gateway(spec(s.url), CallLog(None), cancel=stop).complete("x")
        assert len(s.requests) == 1
    assert not stop.is_set() and stop.cause is None


def test_unusable_server_names_the_fix() -> None:
    gw = Gateway(spec("http://127.0.0.1:9/v1", timeout_s=2), CallLog(None))
    with pytest.raises(ModelUnreachableError, match="fix model.api_base"):
        gw.complete("x")


def _max_in_flight(gateways: list[Gateway], calls: int) -> None:
    threads = [
        threading.Thread(target=gateways[i % len(gateways)].complete, args=(f"prompt {i}",))
        for i in range(calls)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_roles_on_one_endpoint_share_its_limit() -> None:
    with FakeOpenAIServer(latency_s=0.15) as s:
        specs = [spec(s.url, concurrency=2, name="model"), spec(s.url, concurrency=3, name="judge")]
        limits = EndpointLimits(specs)
        gateways = [Gateway(x, CallLog(None), limits=limits, role=x.name) for x in specs]
        _max_in_flight(gateways, 8)
        assert len(s.requests) == 8
        assert s.max_in_flight == 2  # the smaller of the two roles' limits, shared
        assert gateways[0].concurrency == gateways[1].concurrency == 2


def test_each_job_gets_the_limit_it_asks_for() -> None:
    """Two jobs in one process (a sweep over model.concurrency) keep their own limits."""
    with FakeOpenAIServer(latency_s=0.15) as s:
        for concurrency in (2, 5):
            s.max_in_flight = 0
            x = spec(s.url, concurrency=concurrency)
            gateway = Gateway(x, CallLog(None), limits=EndpointLimits([x]))
            _max_in_flight([gateway], 10)
            assert s.max_in_flight == concurrency


def test_cost_overrides_price_unmapped_models(server: FakeOpenAIServer) -> None:
    log = CallLog(None)
    gw = Gateway(spec(server.url, input_cost_per_token=1e-3, output_cost_per_token=2e-3), log)
    out = gw.complete("price me")
    assert out.cost_usd == pytest.approx(1e-3 * out.prompt_tokens + 2e-3 * out.completion_tokens)
    assert log.totals.cost_usd == pytest.approx(out.cost_usd)


def test_mapped_model_is_priced_from_litellms_bundled_map(server: FakeOpenAIServer) -> None:
    gw = Gateway(spec(server.url, model="openai/gpt-4-0613", context_window=None), CallLog(None))
    assert gw.context_window == 8192  # from litellm's model info
    out = gw.complete("price me")
    assert out.cost_usd == pytest.approx(3e-5 * out.prompt_tokens + 6e-5 * out.completion_tokens)


def test_missing_api_key_is_reported_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key named in the config is the preflight's check; one only litellm names, the gateway's."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    named = ModelSpec(
        name="claude",
        model="anthropic/claude-sonnet-4-5-20250929",
        api_key_env="ANTHROPIC_API_KEY",
    )
    with pytest.raises(AuthError, match="^model=claude needs ANTHROPIC_API_KEY in the environment"):
        preflight.keys({"model": named})
    gw = Gateway(replace(named, api_key_env=None), CallLog(None))
    with pytest.raises(AuthError, match="^model=claude needs ANTHROPIC_API_KEY in the environment"):
        gw.check_ready()


def test_unknown_context_window_asks_for_the_key() -> None:
    with pytest.raises(ConfigError, match="set model.context_window"):
        Gateway(ModelSpec(name="x", model="openai/not-a-real-model-xyz"), CallLog(None))


def test_api_key_never_reaches_the_call_log(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-" + "s3cr3t" * 5
    monkeypatch.setenv("FAKE_KEY", secret)
    log = CallLog(tmp_path / "calls.jsonl")
    Gateway(spec(server.url, api_key_env="FAKE_KEY"), log).complete("x")
    assert secret not in (tmp_path / "calls.jsonl").read_text()


def test_identical_requests_at_once_are_asked_once(tmp_path: Path) -> None:
    """Threads of a strategy may send the same request at once (two chunks with the same
    text): the first is asked, the others wait for it and take its answer from the cache."""
    log, cache = CallLog(None), ResponseCache(tmp_path / "cache")
    with FakeOpenAIServer(latency_s=0.3) as server:
        gateway = Gateway(spec(server.url, concurrency=4), log, cache)
        results: list[str] = []
        threads = [
            threading.Thread(target=lambda: results.append(gateway.complete("same").text))
            for _ in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(server.requests) == 1
    assert len(results) == 3 and len(set(results)) == 1
    assert log.totals.calls == 1 and log.totals.cache_hits == 2
