"""OpenAI's Batch API adapter against the loopback server speaking OpenAI's files + batches.

What a batch sends is checked against what litellm posts online for the same request (the
body captured on the wire by the same server), and what it answers against the gateway's
own reading of the online answer (``completions.from_response`` through litellm and HTTP).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from runner.api.errors import (
    AuthError,
    LLMError,
    ModelUnreachableError,
    RateLimitedError,
    TransientLLMError,
)
from runner.api.types import Completion, Message
from runner.llm.batch.openai import OpenAIBatches
from runner.llm.batch.protocol import BatchAnswer, BatchFailure, BatchRequest
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway, ModelSpec
from runner.llm.request import Request, build_request
from runner.llm.retry import RetryPolicy
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply

KEY = "sk-FAKE-not-a-real-key-0000"


def spec(url: str | None, model: str = "openai/gpt-4o-mini", **kw: Any) -> ModelSpec:
    return ModelSpec(
        name="gpt",
        model=model,
        api_base=url,
        context_window=8192,
        retry=RetryPolicy(max_attempts=1),
        **kw,
    )


def request(s: ModelSpec, messages: list[Message], **kw: Any) -> Request:
    args: dict[str, Any] = dict(
        temperature=0.5, max_tokens=64, stop=None, seed=7, sample=0, response_format=None
    )
    args.update(kw)
    return build_request(s, messages, **args)


def online(s: ModelSpec, messages: list[Message], **kw: Any) -> Completion:
    """The gateway's online call of the same request (no cache)."""
    args: dict[str, Any] = dict(temperature=0.5, max_tokens=64, stop=None)
    args.update(kw)
    return Gateway(s, CallLog(None), seed=7).complete(messages, **args)


def numbered(s: ModelSpec, word: str, n: int) -> list[BatchRequest]:
    """``n`` requests asking '<word><i>', custom_ids 000...<i>."""
    asks = [request(s, [Message("user", f"{word}{i}")]) for i in range(n)]
    return [BatchRequest(f"{i:064d}", ask) for i, ask in enumerate(asks)]


def run_to_end(adapter: OpenAIBatches, batch_id: str, limit: int = 20) -> list[str]:
    """The statuses seen, retrieving until the batch ends."""
    seen = []
    for _ in range(limit):
        state = adapter.state(batch_id)
        seen.append(state.status)
        if state.ended:
            return seen
    raise AssertionError(f"batch never ended: {seen}")


def uploaded_lines(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    (upload,) = server.batches.uploads
    return [json.loads(line) for line in upload.data.decode().splitlines()]


@pytest.fixture
def openai_home(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """OpenAI's own host (no api_base) played by the loopback server, for litellm and the SDK."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    yield


SHAPES: list[tuple[str, bool, list[Message], dict[str, Any]]] = [
    ("openai/fake-compatible", True, [Message("user", "Judge this summary.")], {}),
    (
        "openai/gpt-4o-mini",
        False,
        [Message("system", "  Answer in JSON.\n"), Message("user", "Is it coherent?\n\n")],
        dict(response_format={"type": "json_object"}, stop=["\n\n", "END"], top_logprobs=3),
    ),
    (  # an o-series model: litellm sends max_completion_tokens, drops temperature
        "openai/o3-mini",
        False,
        [Message("system", "Be strict."), Message("user", "Score it 1-5.")],
        dict(top_logprobs=2),
    ),
    (  # a Claude behind an OpenAI-compatible proxy: the cache mark travels as a block
        "openai/claude-3-5-haiku-latest",
        True,
        [
            Message("system", "You are a judge."),
            Message("user", "A long document " * 20, cache=True),
            Message("assistant", "Noted."),
            Message("user", "Now the question."),
        ],
        {},
    ),
    ("gpt-4o", False, [Message("user", "Bare model name.")], dict(max_tokens=5)),
]


@pytest.mark.parametrize(("model", "own_server", "messages", "kw"), SHAPES)
def test_each_line_body_is_what_litellm_posts_online(
    server: FakeOpenAIServer,
    openai_home: None,
    model: str,
    own_server: bool,
    messages: list[Message],
    kw: dict[str, Any],
) -> None:
    s = spec(server.url if own_server else None, model)
    online(s, messages, **kw)
    posted = server.requests[-1]
    adapter = OpenAIBatches(s, KEY if not own_server else "no-key")
    req = request(s, messages, **kw)
    assert adapter.body(req) == posted
    adapter.submit([BatchRequest("a" * 64, req)])
    (line,) = uploaded_lines(server)
    assert line == {
        "custom_id": "a" * 64,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": posted,
    }
    assert adapter.line_bytes(BatchRequest("a" * 64, req)) == len(server.batches.uploads[0].data)


def test_bodies_of_one_shape_keep_each_requests_texts(
    server: FakeOpenAIServer, openai_home: None
) -> None:
    """litellm builds a shape's body once; every request of the shape still gets its own text."""
    s = spec(None, "openai/o3-mini")
    adapter = OpenAIBatches(s, KEY)
    texts = ["First story.", "Second story, longer.", "<runner-batch-text-0> looks like a marker"]
    for text in texts:
        messages = [Message("system", "Be strict."), Message("user", text)]
        online(s, messages)
        assert adapter.body(request(s, messages)) == server.requests[-1]
    assert len(adapter._bodies._templates) == 1


REPLIES = [
    FakeReply(text="A plain answer."),
    FakeReply(text="Cut off mid", finish_reason="length"),
    FakeReply(text="Served partly from the prefix cache.", cached_tokens=1024),
    FakeReply(text="yes", top_logprobs=[{"yes": -0.1, "no": -2.4}]),
]


@pytest.mark.parametrize("reply", REPLIES, ids=["stop", "length", "cached", "logprobs"])
def test_answers_equal_the_online_calls_from_response(reply: FakeReply) -> None:
    prompt = [Message("user", "Rate the summary. " * 80)]
    with FakeOpenAIServer(lambda r: reply) as server:
        s = spec(server.url)
        want = online(s, prompt, top_logprobs=2)
        adapter = OpenAIBatches(s, "no-key")
        batch_id = adapter.submit([BatchRequest("k" * 64, request(s, prompt, top_logprobs=2))])
        run_to_end(adapter, batch_id)
        got = adapter.results(batch_id)["k" * 64]
    assert isinstance(got, BatchAnswer)
    assert got.text == want.text
    assert got.prompt_tokens == want.prompt_tokens
    assert got.completion_tokens == want.completion_tokens
    assert got.cached_prompt_tokens == want.cached_prompt_tokens == reply.cached_tokens
    assert got.finish_reason == want.finish_reason == reply.finish_reason
    assert got.online_cost_usd == pytest.approx(want.cost_usd) and want.cost_usd > 0
    if "top_logprobs" in BatchAnswer.__dataclass_fields__:
        assert getattr(got, "top_logprobs") == want.top_logprobs  # noqa: B009 (a newer field)


def test_a_logprobs_request_goes_online_while_a_batch_answer_cannot_carry_them(
    server: FakeOpenAIServer,
) -> None:
    s = spec(server.url)
    adapter = OpenAIBatches(s, "no-key")
    plain = request(s, [Message("user", "x")], response_format={"type": "json_object"})
    asks = request(s, [Message("user", "x")], top_logprobs=5)
    carries = "top_logprobs" in BatchAnswer.__dataclass_fields__
    assert adapter.accepts(plain) and adapter.accepts(asks) == carries


def test_status_moves_from_validating_to_completed_with_growing_counts() -> None:
    with FakeOpenAIServer(batch_steps=3) as server:
        s = spec(server.url)
        adapter = OpenAIBatches(s, "no-key")
        items = numbered(s, "n", 6)
        batch_id = adapter.submit(items)
        assert server.batches.batches[batch_id].status == "validating"
        states = []
        while not states or not states[-1].ended:
            states.append(adapter.state(batch_id))
        assert server.batches.retrieves(batch_id) == len(states) == 5
    assert [st.status for st in states] == [
        "in_progress",
        "in_progress",
        "in_progress",
        "finalizing",
        "completed",
    ]
    assert [st.done for st in states] == [0, 3, 4, 6, 6]
    assert all(st.total == 6 and st.failed == 0 for st in states)
    assert [st.ended for st in states] == [False, False, False, False, True]
    assert server.batches.created == [(batch_id, [item.custom_id for item in items])]


def scripted(custom_id: str, body: dict[str, Any], attempt: int) -> str | int | None:
    return {"1": "error", "2": 400, "3": "expired", "4": "missing"}.get(custom_id[-1])


def test_a_mix_of_answered_failed_expired_and_missing_lines() -> None:
    with FakeOpenAIServer(batch_fail=scripted) as server:
        s = spec(server.url)
        adapter = OpenAIBatches(s, "no-key")
        items = numbered(s, "q", 6)
        batch_id = adapter.submit(items)
        assert run_to_end(adapter, batch_id)[-1] == "expired"
        state = adapter.state(batch_id)
        results = adapter.results(batch_id)
    assert state.ended and (state.total, state.done, state.failed) == (6, 2, 4)
    assert set(results) == {item.custom_id for item in items}
    answered = {k: v for k, v in results.items() if isinstance(v, BatchAnswer)}
    assert sorted(k[-1] for k in answered) == ["0", "5"]
    assert answered[items[0].custom_id].text == "q0."  # the echo responder, as online
    failures = {k[-1]: v for k, v in results.items() if isinstance(v, BatchFailure)}
    assert failures["1"].retry and failures["1"].error.startswith("HTTP 500 server_error")
    assert not failures["2"].retry and failures["2"].error.startswith("HTTP 400")
    assert failures["3"].retry and failures["3"].error.startswith("batch_expired: ")
    assert failures["4"] == BatchFailure("no result", retry=True)
    assert all("\n" not in f.error for f in failures.values())


def test_a_resubmitted_request_is_answered_the_second_time() -> None:
    """``attempt`` counts the batches that held a custom_id: a failed line can pass later."""
    fail_once = lambda cid, body, attempt: "error" if attempt == 0 else None  # noqa: E731
    with FakeOpenAIServer(batch_fail=fail_once) as server:
        s = spec(server.url)
        adapter = OpenAIBatches(s, "no-key")
        item = BatchRequest("f" * 64, request(s, [Message("user", "again")]))
        first = adapter.submit([item])
        run_to_end(adapter, first)
        assert isinstance(adapter.results(first)[item.custom_id], BatchFailure)
        second = adapter.submit([item])
        run_to_end(adapter, second)
        assert isinstance(adapter.results(second)[item.custom_id], BatchAnswer)


def test_cancel_keeps_what_ran_and_fails_the_rest_for_a_resubmission() -> None:
    with FakeOpenAIServer(batch_never_end=True, batch_steps=1) as server:
        s = spec(server.url)
        adapter = OpenAIBatches(s, "no-key")
        items = numbered(s, "c", 4)
        batch_id = adapter.submit(items)
        for _ in range(5):  # never ends on its own
            state = adapter.state(batch_id)
        assert state.status == "in_progress" and not state.ended and state.done == 2
        adapter.cancel(batch_id)
        assert server.batches.batches[batch_id].status == "cancelling"
        state = adapter.state(batch_id)
        results = adapter.results(batch_id)
        adapter.cancel(batch_id)  # already cancelled: nothing to do, no error
    assert state.status == "cancelled" and state.ended and (state.done, state.failed) == (2, 2)
    kinds = sorted(type(v).__name__ for v in results.values())
    assert kinds == ["BatchAnswer", "BatchAnswer", "BatchFailure", "BatchFailure"]
    failures = [v for v in results.values() if isinstance(v, BatchFailure)]
    assert all(f.retry and f.error.startswith("batch_cancelled: ") for f in failures)


def test_an_openai_compatible_server_without_a_priced_model() -> None:
    """A vLLM-like server: its own address, no key, a model litellm cannot price."""
    with FakeOpenAIServer() as server:
        s = spec(server.url, "openai/meta-llama/Llama-3.1-8B-Instruct")
        prompt = [Message("user", "Summarize the chapter.")]
        want = online(s, prompt)
        adapter = OpenAIBatches(s, "no-key")
        batch_id = adapter.submit([BatchRequest("v" * 64, request(s, prompt))])
        run_to_end(adapter, batch_id)
        got = adapter.results(batch_id)["v" * 64]
        listed = openai.OpenAI(api_key="no-key", base_url=server.url).batches.list()
    assert [b.id for b in listed.data] == [batch_id]
    assert uploaded_lines(server)[0]["body"]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert server.authorizations[-1] == "Bearer no-key"
    assert isinstance(got, BatchAnswer) and got.text == want.text
    assert want.cost_usd == 0 and got.online_cost_usd is None  # the collector prices it


def test_a_server_without_batch_endpoints_is_one_line_naming_the_fix() -> None:
    def no_batches(method: str, path: str) -> FakeReply | None:
        return FakeReply(status=404, text="Not Found")

    with FakeOpenAIServer(batch_http=no_batches) as server:
        s = spec(server.url, "openai/local-model")
        adapter = OpenAIBatches(s, "no-key", role="judge")
        with pytest.raises(LLMError) as err:
            adapter.submit([BatchRequest("n" * 64, request(s, [Message("user", "x")]))])
    message = str(err.value)
    assert "\n" not in message and "judge=gpt" in message
    assert "/v1/batches" in message and "judge.batch" in message


def test_a_batch_openai_refused_for_its_input_fails_every_request_for_good() -> None:
    with FakeOpenAIServer() as server:
        s = spec(server.url)
        adapter = OpenAIBatches(s, "no-key")
        same = request(s, [Message("user", "dup")])
        batch_id = adapter.submit([BatchRequest("d" * 64, same), BatchRequest("d" * 64, same)])
        assert run_to_end(adapter, batch_id) == ["failed"]
        results = adapter.results(batch_id)
    (failure,) = results.values()
    assert isinstance(failure, BatchFailure) and not failure.retry
    assert failure.error.startswith("batch failed: duplicate_custom_id (line 2)")


@pytest.mark.parametrize(
    ("status", "headers", "error"),
    [
        (401, {}, AuthError),
        (403, {}, AuthError),
        (429, {"Retry-After": "7"}, RateLimitedError),
        (500, {}, TransientLLMError),
        (503, {}, TransientLLMError),
        (400, {}, LLMError),
    ],
)
def test_http_errors_become_runner_errors_without_the_key(
    status: int, headers: dict[str, str], error: type[LLMError]
) -> None:
    leak = f"Incorrect API key provided: {KEY}. Also {KEY[:8]}***7890."

    def fail_create(method: str, path: str) -> FakeReply | None:
        if path == "/v1/batches" and method == "POST":
            return FakeReply(status=status, text=leak, headers=headers)
        return None

    with FakeOpenAIServer(batch_http=fail_create) as server:
        s = spec(server.url, api_key_env="MY_OPENAI_KEY")
        adapter = OpenAIBatches(s, KEY, role="judge")
        with pytest.raises(LLMError) as err:
            adapter.submit([BatchRequest("e" * 64, request(s, [Message("user", "x")]))])
        uploaded = [f.id for f in server.batches.uploads]
    assert type(err.value) is error
    message = str(err.value)
    assert message.startswith("judge=gpt: ") and "\n" not in message
    assert KEY not in message and KEY[:8] not in message
    assert f"HTTP {status}" in message or f"error {status}" in message or status == 429
    if status in (401, 403):
        assert "MY_OPENAI_KEY" in message
    if status == 429:
        assert isinstance(err.value, RateLimitedError) and err.value.retry_after == 7.0
    assert error.retryable == (status >= 429)
    assert uploaded == [] and len(server.batches.deleted) == 1  # no orphan input file


def test_an_unusable_server_is_model_unreachable() -> None:
    with FakeOpenAIServer() as server:
        url = server.url
    adapter = OpenAIBatches(spec(url, timeout_s=2.0), "no-key", role="judge")
    with pytest.raises(ModelUnreachableError) as err:
        adapter.state("batch_123")
    assert "judge.api_base" in str(err.value) and "\n" not in str(err.value)


def test_no_key_for_openais_own_host_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AuthError) as err:
        OpenAIBatches(spec(None, api_key_env="MY_OPENAI_KEY"), None, role="judge")
    assert str(err.value) == (
        "judge=gpt: no API key for OpenAI's batch API; set MY_OPENAI_KEY in the environment"
    )


def test_limits_are_openais() -> None:
    adapter = OpenAIBatches(spec("http://127.0.0.1:9/v1"), "no-key")
    assert adapter.name == "openai"
    assert adapter.max_requests == 50_000 and adapter.max_bytes == 200_000_000


def test_a_batch_the_server_does_not_know_names_the_ledger(server: FakeOpenAIServer) -> None:
    adapter = OpenAIBatches(spec(server.url), "no-key", role="judge")
    with pytest.raises(LLMError) as err:
        adapter.state("batch_made_elsewhere")
    message = str(err.value)
    assert type(err.value) is LLMError and "\n" not in message
    assert "batch_made_elsewhere" in message and "python -m runner.batches" in message
