"""Anthropic's Message Batches adapter against the loopback server speaking Anthropic's API.

What a batch sends is checked against what litellm posts online for the same request (the
body the same server received at ``/v1/messages``), and what it answers against the
gateway's own reading of the online answer (``completions.from_response`` through litellm
and HTTP): two independent paths that must agree field by field.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from runner.api.errors import (
    AuthError,
    LLMError,
    ModelUnreachableError,
    RateLimitedError,
    TransientLLMError,
)
from runner.api.text import count_tokens
from runner.api.types import Completion, Message
from runner.llm.batch.anthropic import AnthropicBatches, sdk_base_url
from runner.llm.batch.protocol import BatchAnswer, BatchFailure, BatchRequest
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway, ModelSpec
from runner.llm.request import Request, build_request
from runner.llm.retry import RetryPolicy
from tests.helpers.anthropic_server import AnthropicReply, FakeAnthropicServer
from tests.helpers.ports import free_port

KEY = "sk-ant-FAKE-not-a-real-key-0000"
ENV = "FAKE_ANTHROPIC_KEY"
STORY = (
    "The keeper of the lighthouse on Gull Rock kept a log of every ship that passed. "
    "One winter night the lamp failed, and she rowed out with a lantern to warn a schooner "
    "off the reef. The crew never learned her name."
)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key in the spec's variable; none in Anthropic's own (nothing read by accident)."""
    monkeypatch.setenv(ENV, KEY)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_API_BASE", raising=False)


def spec(url: str | None, **kw: Any) -> ModelSpec:
    args: dict[str, Any] = dict(
        name="claude",
        model="anthropic/claude-sonnet-4-5-20250929",  # conf/model/claude.yaml's
        api_base=url,
        api_key_env=ENV,
        context_window=200_000,
        temperature=1.0,
        top_p=1.0,
        retry=RetryPolicy(max_attempts=1),
    )
    args.update(kw)
    return ModelSpec(**args)


def adapter(s: ModelSpec) -> AnthropicBatches:
    return AnthropicBatches(s, KEY, role="judge")


def request(s: ModelSpec, messages: list[Message], **kw: Any) -> Request:
    """The request the gateway below builds for the same call."""
    args: dict[str, Any] = dict(
        temperature=s.temperature, max_tokens=64, stop=None, seed=7, sample=0, response_format=None
    )
    args.update(kw)
    return build_request(s, messages, **args)


def online(s: ModelSpec, messages: list[Message], **kw: Any) -> Completion:
    """The gateway's online call of the same request (litellm's anthropic provider, no cache)."""
    args: dict[str, Any] = dict(max_tokens=64, stop=None)
    args.update(kw)
    return Gateway(s, CallLog(None), seed=7, role="judge").complete(messages, **args)


def run_to_end(batches: AnthropicBatches, batch_id: str, limit: int = 20) -> list[str]:
    """The statuses seen, retrieving until the batch ends."""
    seen = []
    for _ in range(limit):
        state = batches.state(batch_id)
        seen.append(state.status)
        if state.ended:
            return seen
    raise AssertionError(f"batch never ended: {seen}")


def batch_of(
    batches: AnthropicBatches, items: list[BatchRequest]
) -> tuple[str, dict[str, BatchAnswer | BatchFailure]]:
    batch_id = batches.submit(items)
    run_to_end(batches, batch_id)
    return batch_id, batches.results(batch_id)


CASES: dict[str, tuple[list[Message], dict[str, Any]]] = {
    "plain": ([Message("user", f"Summarize in one line: {STORY}")], {}),
    "system prompt": (
        [Message("system", "You are a careful judge."), Message("user", f"Judge: {STORY}")],
        {},
    ),
    "cache_control": (
        [Message("user", f"Story: {STORY}", cache=True), Message("user", "Who rowed out?")],
        {},
    ),
    "multi-turn": (
        [
            Message("user", f"Story: {STORY}", cache=True),
            Message("assistant", "Read."),
            Message("user", "Name the rock."),
        ],
        {},
    ),
    "stop": ([Message("user", f"Repeat: {STORY}")], {"stop": ["lighthouse", "reef"]}),
    "max_tokens None": ([Message("user", f"Retell: {STORY}")], {"max_tokens": None}),
    "cut at max_tokens": ([Message("user", f"Retell: {STORY}")], {"max_tokens": 5}),
    "temperature 0": ([Message("user", f"Retell: {STORY}")], {"temperature": 0.0}),
}


@pytest.mark.parametrize("prompt_cache", ["read", "write"])
@pytest.mark.parametrize("case", list(CASES))
def test_batch_body_and_answer_are_the_online_calls(case: str, prompt_cache: str) -> None:
    messages, kw = CASES[case]
    with FakeAnthropicServer(api_key=KEY, prompt_cache=prompt_cache) as server:  # type: ignore[arg-type]
        s = spec(server.url)
        done = online(s, messages, **kw)
        item = BatchRequest("req-" + case.replace(" ", "_"), request(s, messages, **kw))
        batch_id, results = batch_of(adapter(s), [item])
        sent_online = server.online_requests[-1]
        assert server.batch(batch_id).params[item.custom_id] == sent_online
    got = results[item.custom_id]
    assert isinstance(got, BatchAnswer), got
    assert got.text == done.text
    assert got.prompt_tokens == done.prompt_tokens
    assert got.completion_tokens == done.completion_tokens
    assert got.cached_prompt_tokens == done.cached_prompt_tokens
    assert got.finish_reason == done.finish_reason
    assert got.online_cost_usd == pytest.approx(done.cost_usd, rel=1e-12) and done.cost_usd > 0


def test_a_configured_price_is_the_online_price_too() -> None:
    with FakeAnthropicServer(api_key=KEY) as server:
        s = spec(server.url, input_cost_per_token=1e-6, output_cost_per_token=5e-6)
        messages = [Message("user", f"Story: {STORY}", cache=True), Message("user", "Who?")]
        done = online(s, messages)
        _, results = batch_of(adapter(s), [BatchRequest("p", request(s, messages))])
    got = results["p"]
    assert isinstance(got, BatchAnswer)
    expected = 1e-6 * got.prompt_tokens + 5e-6 * got.completion_tokens
    assert got.online_cost_usd == pytest.approx(expected) == pytest.approx(done.cost_usd)


def test_the_cases_reach_what_they_are_meant_to() -> None:
    """The cases above are not all alike: system, cache marks, stops and cuts reach the wire."""
    with FakeAnthropicServer(api_key=KEY) as server:
        s = spec(server.url)
        stop = online(s, CASES["stop"][0], **CASES["stop"][1])
        cut = online(s, CASES["cut at max_tokens"][0], **CASES["cut at max_tokens"][1])
        cached = online(s, CASES["cache_control"][0])
        online(s, CASES["system prompt"][0])
        online(s, CASES["max_tokens None"][0], max_tokens=None)
        stop_body, cut_body, cache_body, system_body, default_body = server.online_requests
    assert stop_body["stop_sequences"] == ["lighthouse", "reef"]
    assert stop.text == "Repeat: The keeper of the " and stop.finish_reason == "stop"
    assert cut.finish_reason == "length" and cut.completion_tokens == 5
    assert cut_body["max_tokens"] == 5
    block = cache_body["messages"][0]["content"][0]
    assert block["cache_control"] == {"type": "ephemeral"}
    marked = count_tokens(f"Story: {STORY}")
    assert cached.cached_prompt_tokens == marked  # the cache-marked prefix, read
    assert cached.prompt_tokens == count_tokens(f"Story: {STORY}\nWho rowed out?")
    assert system_body["system"][0]["text"] == "You are a careful judge."
    assert all(m["role"] != "system" for m in system_body["messages"])
    assert default_body["max_tokens"] > 1000 and "seed" not in default_body  # litellm's default
    assert default_body["model"] == "claude-sonnet-4-5-20250929"  # no 'anthropic/' prefix


def test_many_requests_of_one_shape_each_carry_their_own_online_body() -> None:
    """litellm builds a shape's body once; each request's body is still what it posts online."""
    texts = [f"Question {i}: {STORY[: 40 + 7 * i]}" for i in range(6)]
    texts[3] = "  padded, with a stop word: reef  "
    system = Message("system", "You judge summaries.")
    with FakeAnthropicServer(api_key=KEY) as server:
        s = spec(server.url)
        done = [online(s, [system, Message("user", t)], stop=["reef"]) for t in texts]
        items = [
            BatchRequest(f"q{i}", request(s, [system, Message("user", t)], stop=["reef"]))
            for i, t in enumerate(texts)
        ]
        batches = adapter(s)
        sizes = [batches.line_bytes(item) for item in items]
        batch_id, results = batch_of(batches, items)
        params = server.batch(batch_id).params
        sent_online = server.online_requests
    assert [params[item.custom_id] for item in items] == sent_online
    assert [results[item.custom_id] for item in items] == [
        BatchAnswer(
            text=d.text,
            prompt_tokens=d.prompt_tokens,
            completion_tokens=d.completion_tokens,
            finish_reason=d.finish_reason,
            online_cost_usd=d.cost_usd,
        )
        for d in done
    ]
    for item, size in zip(items, sizes, strict=True):
        line = {"custom_id": item.custom_id, "params": params[item.custom_id]}
        assert size == len(json.dumps(line).encode()) + 1


def test_status_progression_and_counts() -> None:
    with FakeAnthropicServer(api_key=KEY, steps=3, fail={"b": "errored"}) as server:
        s = spec(server.url)
        batches = adapter(s)
        items = [BatchRequest(c, request(s, [Message("user", f"{c}: {STORY}")])) for c in "abc"]
        batch_id = batches.submit(items)
        states = [batches.state(batch_id) for _ in range(4)]
        assert server.retrieves[batch_id] == 4
    assert [st.status for st in states] == ["in_progress"] * 3 + ["ended"]
    assert [st.ended for st in states] == [False, False, False, True]
    assert [(st.done, st.failed, st.total) for st in states] == [(0, 0, 3)] * 3 + [(2, 1, 3)]


def test_results_mix_answers_and_failures_each_with_its_retry() -> None:
    def invalid(custom_id: str, params: dict[str, Any]) -> bool:
        return "INVALID" in json.dumps(params)

    fail: dict[Any, Any] = {
        "api": "errored",
        "late": "expired",
        "busy": "overloaded",
        "gone": "canceled",
        invalid: "invalid_request",
    }
    with FakeAnthropicServer(api_key=KEY, fail=fail) as server:
        s = spec(server.url)
        names = {"ok": STORY, "api": STORY, "late": STORY, "busy": STORY, "gone": STORY}
        names["bad"] = "INVALID " + STORY
        items = [
            BatchRequest(c, request(s, [Message("user", f"{c} {t}")])) for c, t in names.items()
        ]
        batches = adapter(s)
        batch_id, results = batch_of(batches, items)
        state = batches.state(batch_id)
    assert (state.done, state.failed, state.total) == (1, 5, 6)
    assert isinstance(results["ok"], BatchAnswer)
    failures = {c: r for c, r in results.items() if isinstance(r, BatchFailure)}
    assert {c: f.retry for c, f in failures.items()} == {
        "api": True,
        "late": True,
        "busy": True,
        "gone": True,
        "bad": False,
    }
    assert failures["api"].error == "api_error: Internal server error"
    assert failures["busy"].error.startswith("overloaded_error: ")
    assert failures["bad"].error == "invalid_request_error: scripted invalid request"
    assert failures["late"].error == "expired" and failures["gone"].error == "canceled"


def test_a_request_failed_in_its_first_batch_is_answered_when_sent_again() -> None:
    def first_time_fails(custom_id: str, params: dict[str, Any], attempt: int) -> str | None:
        return "errored" if attempt == 0 and custom_id == "flaky" else None

    with FakeAnthropicServer(api_key=KEY, fail=first_time_fails, steps=0) as server:  # type: ignore[arg-type]
        s = spec(server.url)
        batches = adapter(s)
        flaky = BatchRequest("flaky", request(s, [Message("user", STORY)]))
        steady = BatchRequest("steady", request(s, [Message("user", "Other: " + STORY)]))
        _, first = batch_of(batches, [flaky, steady])
        _, second = batch_of(batches, [flaky])
        answer = online(s, [Message("user", STORY)])
    assert isinstance(first["flaky"], BatchFailure) and first["flaky"].retry
    assert isinstance(first["steady"], BatchAnswer)
    assert isinstance(second["flaky"], BatchAnswer) and second["flaky"].text == answer.text
    assert [b.custom_ids for b in server.batches] == [["flaky", "steady"], ["flaky"]]


def test_an_empty_answer_is_a_failure_to_send_again_as_online_it_is_retried() -> None:
    with FakeAnthropicServer(lambda params: "", api_key=KEY, steps=0) as server:
        s = spec(server.url)
        _, results = batch_of(adapter(s), [BatchRequest("e", request(s, [Message("user", "x")]))])
    got = results["e"]
    assert isinstance(got, BatchFailure) and got.retry and "empty answer" in got.error


def test_cancel_ends_the_batch_with_its_requests_canceled() -> None:
    with FakeAnthropicServer(api_key=KEY, never_end=True) as server:
        s = spec(server.url)
        batches = adapter(s)
        batch_id = batches.submit([BatchRequest("c1", request(s, [Message("user", STORY)]))])
        before = [batches.state(batch_id) for _ in range(3)]
        batches.cancel(batch_id)
        after = batches.state(batch_id)
        results = batches.results(batch_id)
        assert server.cancelled == [batch_id]
    assert [st.status for st in before] == ["in_progress"] * 3  # never_end: would wait forever
    assert after.ended and (after.done, after.failed, after.total) == (0, 1, 1)
    assert results == {"c1": BatchFailure("canceled", retry=True)}


def test_the_server_lists_batches_newest_first_in_pages() -> None:
    with FakeAnthropicServer(api_key=KEY) as server:
        s = spec(server.url)
        batches = adapter(s)
        made = [
            batches.submit([BatchRequest(f"l{i}", request(s, [Message("user", f"{i}")]))])
            for i in range(3)
        ]
        client = anthropic.Anthropic(api_key=KEY, base_url=server.url, max_retries=0)
        first_page = client.messages.batches.list(limit=2)
        listed = [b.id for b in client.messages.batches.list(limit=2)]  # auto-paging
    assert [b.id for b in first_page.data] == made[::-1][:2] and first_page.has_more
    assert listed == made[::-1]


def test_accepts_refuses_json_mode_and_log_probabilities() -> None:
    s = spec("http://127.0.0.1:1")
    batches = adapter(s)
    plain = request(s, [Message("user", "x")])
    assert batches.accepts(plain)
    assert not batches.accepts(
        request(s, [Message("user", "x")], response_format={"type": "json_object"})
    )
    assert not batches.accepts(request(s, [Message("user", "x")], top_logprobs=3))


@pytest.mark.parametrize("suffix", ["", "/", "/v1/messages", "/v1/messages/"])
def test_the_sdk_reaches_the_server_litellm_posts_to(suffix: str) -> None:
    with FakeAnthropicServer(api_key=KEY, steps=0) as server:
        s = spec(server.url + suffix)
        done = online(s, [Message("user", STORY)])
        _, results = batch_of(adapter(s), [BatchRequest("u", request(s, [Message("user", STORY)]))])
        assert ("POST", "/v1/messages") in server.paths
        assert ("POST", "/v1/messages/batches") in server.paths
    got = results["u"]
    assert isinstance(got, BatchAnswer) and got.text == done.text


def test_no_api_base_is_anthropics_own_host_or_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sdk_base_url(None) is None  # the SDK's default, https://api.anthropic.com
    monkeypatch.setenv("ANTHROPIC_API_BASE", "http://127.0.0.1:9/v1/messages")
    assert sdk_base_url(None) == "http://127.0.0.1:9"


def test_401_is_an_auth_error_naming_the_variable_never_the_key() -> None:
    with FakeAnthropicServer(api_key="another-key") as server:
        s = spec(server.url)
        with pytest.raises(AuthError) as caught:
            adapter(s).submit([BatchRequest("a", request(s, [Message("user", "x")]))])
        assert server.api_keys == [KEY]  # the configured key travelled (as the SDK's Bearer)
    message = str(caught.value)
    assert message.startswith("judge=claude: ") and ENV in message and "401" in message
    assert KEY not in message and "\n" not in message


def test_no_key_at_all_for_anthropics_own_host_is_one_line() -> None:
    with pytest.raises(AuthError, match=f"judge=claude: no API key .* set {ENV}"):
        AnthropicBatches(spec(None), None, role="judge")


def test_429_is_rate_limited_with_the_servers_retry_after() -> None:
    with FakeAnthropicServer(api_key=KEY, status_override=429, retry_after_s=7) as server:
        s = spec(server.url)
        with pytest.raises(RateLimitedError) as caught:
            adapter(s).submit([BatchRequest("a", request(s, [Message("user", "x")]))])
    assert caught.value.retry_after == 7.0 and caught.value.retryable
    assert "rate limited while creating the batch" in str(caught.value)


def test_500_while_looking_is_transient_and_the_batch_is_still_there() -> None:
    def on_get(method: str, path: str) -> int | None:
        return 500 if method == "GET" else None

    with FakeAnthropicServer(api_key=KEY) as server:
        s = spec(server.url)
        batches = adapter(s)
        batch_id = batches.submit([BatchRequest("a", request(s, [Message("user", "x")]))])
        server.status_override = on_get
        with pytest.raises(TransientLLMError, match="server error 500 while looking at batch"):
            batches.state(batch_id)
        server.status_override = None
        assert run_to_end(batches, batch_id)[-1] == "ended"


def test_an_unusable_server_is_a_transient_unreachable_error() -> None:
    s = spec(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ModelUnreachableError, match="judge=claude: cannot reach the model"):
        adapter(s).state("msgbatch_x")


def test_an_unknown_batch_is_one_line() -> None:
    with (
        FakeAnthropicServer(api_key=KEY) as server,
        pytest.raises(LLMError, match="looking at batch msgbatch_nope failed .*HTTP 404"),
    ):
        adapter(spec(server.url)).state("msgbatch_nope")


def test_the_server_answers_online_errors_in_anthropics_shape() -> None:
    reply = AnthropicReply(status=529, text="Overloaded")
    with (
        FakeAnthropicServer(lambda p: reply, api_key=KEY) as server,
        pytest.raises(TransientLLMError, match="judge=claude: server error .*overloaded_error"),
    ):
        online(spec(server.url), [Message("user", "x")])
