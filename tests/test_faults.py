"""Faults from the model provider: a run through a faulty server gives the fault-free results.

The loopback server injects, reproducibly, 429 with Retry-After, 500, 503, read timeouts,
dropped connections, empty answers and cut-off JSON. Every strategy, scored with
metrics=paper, must produce exactly the summaries and per-document scores of a fault-free
run (each with a fresh cache, same seed), without paying any completed call twice; retries
honour Retry-After and a total deadline; a document that exhausts them fails alone
(on_error=continue) or stops the run (on_error=fail).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import InvalidAnswerError, TransientLLMError
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.provider_errors import cut_off_json
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec
from runner.report.runs import select_runs
from runner.run.console import format_summary
from runner.run.lifecycle import RunResult
from runner.tracking.reader import find_runs, finished_run
from tests.helpers.fake_server import FAULT_KINDS, FakeOpenAIServer, FakeReply, FaultPlan
from tests.runner.test_app import artifact, run

TIMEOUT_S = 1.0
"""The client's per-attempt timeout; a 'timeout' fault holds the answer longer."""
STORY = (
    "Mara kept the lighthouse on Gull Rock for thirty winters. Each night she climbed the "
    "stairs, trimmed the wick and watched the channel. One autumn a storm drove the schooner "
    "Wren onto the reef, and Mara rowed out alone through the breakers. She brought back the "
    "captain, two sailors and a boy named Tobias, who stayed to learn the work. "
)
MARKER = "CURSED"
"""A word that makes the responder fail every request that carries it."""


# ------------------------------------------------------------------ a deterministic provider


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _scores(best: int) -> str:
    return "Scores: " + ", ".join(f"{k}: {int(k == best)}" for k in range(1, 6))


def responder(request: dict[str, Any]) -> str | FakeReply:
    """Answers for every strategy, SummIt's evaluator and the BooookScore judge, each a
    function of the request alone (so a retried request gets the same answer)."""
    messages = request["messages"]
    last, first = str(messages[-1]["content"]), str(messages[0]["content"])
    if MARKER in json.dumps(messages):
        return FakeReply(status=500, text="scripted failure")
    if "[Your sentence]" in last:  # BooookScore: flag about one sentence in three
        if int(_digest(last), 16) % 3 == 0:
            return "Questions: Who is Tobias?\nTypes: entity omission"
        return "Questions: no confusion\nTypes: no confusion"
    if first.startswith("You are a summary evaluator"):  # SummIt: two rounds, then stop
        summary = last.split("Summary:\n", 1)[-1]
        if "finally" in summary:
            return "Scores: 1: 0, 2: 0, 3: 0, 4: 0.5, 5: 0.5\nJustification: good now.\n<STOP>"
        if "storm" in summary:
            return f"{_scores(3)}\nJustification: thin.\n- Add the information of the rescue"
        return f"{_scores(2)}\nJustification: vague.\n- Add the information of the storm"
    if last.startswith("Refine:"):
        previous = [m for m in messages if m["role"] == "assistant"][-1]["content"]
        return previous + (
            " A storm came." if "storm" not in previous else " The crew was finally rescued."
        )
    words = sorted(set(re.findall(r"\b[A-Z][a-z]{3,}\b", last)))
    tag = _digest(last)[:6]
    who = words[int(tag, 16) % len(words)] if words else "Someone"
    return (
        f"{who} keeps watch in part {tag}. The night passes without a wreck. Gulls cry at dawn. "
        "The lamp needs oil again. A letter comes from the mainland."
    )


def _documents(folder: Path, second: str = "") -> Path:
    """Three short stories, several chunks each at chunk=128; ``second`` opens the second."""
    folder.mkdir()
    (folder / "gull-rock.txt").write_text(STORY * 3, encoding="utf-8")
    (folder / "the-wren.txt").write_text(
        second + STORY.replace("Mara", "Ines") * 3, encoding="utf-8"
    )
    (folder / "tobias.txt").write_text(STORY.replace("Mara", "Tobias") * 2, encoding="utf-8")
    return folder


def _items(url: str, tmp: Path, name: str, *extra: str, attempts: int = 10) -> list[str]:
    """A job whose every role (model, judge, SummIt's evaluator) is the server at ``url``."""
    retry = [f"retry.max_attempts={attempts}", "retry.base_delay_s=0.05", "retry.max_delay_s=0.5"]
    roles = [
        f"{role}.{key}" for role in ("model", "judge") for key in (*retry, f"timeout_s={TIMEOUT_S}")
    ]
    return [
        "model=openai_compatible",
        f"model.api_base={url}",
        "judge=openai_compatible",
        f"judge.api_base={url}",
        *roles,
        "data=dir",
        f"data.path={tmp / 'docs'}",
        "chunk=128",
        "seed=0",
        f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}",
        f"cache.dir={tmp / ('cache-' + name)}",
        *extra,
    ]


# ------------------------------------------------------------------ the strategies under faults


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One MLflow store for the strategy runs: creating a sqlite store costs seconds."""
    return f"tracking.uri=sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"


@pytest.mark.parametrize("strategy", ["baseline", "hier", "incremental", "summit"])
def test_a_faulty_provider_changes_nothing(strategy: str, tmp_path: Path, store: str) -> None:
    _documents(tmp_path / "docs")
    extra = (f"strategy={strategy}", "metrics=paper", store)
    with FakeOpenAIServer(responder) as clean:
        expected = run(_items(clean.url, tmp_path, "clean", *extra))
    plan = FaultPlan(rate=0.3, seed=7, retry_after_s=0.2, hold_s=TIMEOUT_S + 0.5)
    with FakeOpenAIServer(responder, faults=plan) as faulty:
        started = time.perf_counter()
        got = run(_items(faulty.url, tmp_path, "faulty", *extra))
        wall = time.perf_counter() - started
    assert got.summaries == expected.summaries and len(got.summaries) == 3
    assert got.per_document == expected.per_document
    assert {k: v for k, v in got.system_metrics.items() if not k.startswith(("time/", "wall"))} == {
        k: v for k, v in expected.system_metrics.items() if not k.startswith(("time/", "wall"))
    }
    retries = len(faulty.events) - len(faulty.served)
    print(
        f"\n{strategy}: {got.totals.calls} calls, {retries} retries, "
        f"faults {dict(faulty.injected)}, wall {wall:.1f} s "
        f"(fault-free: documents {expected.timings['documents_s']:.1f} s)"
    )
    # faults happened, of several kinds, and each completed request was answered once
    assert sum(faulty.injected.values()) >= 2 and len(+faulty.injected) >= 2, faulty.injected
    assert max(faulty.served.values()) == 1
    assert sum(faulty.served.values()) == sum(clean.served.values()) == expected.totals.calls
    assert (
        got.totals.calls == expected.totals.calls
        and got.totals.cache_hits == expected.totals.cache_hits
    )


# ------------------------------------------------------------------ the gateway's retries


def _gateway(
    url: str, retry: RetryPolicy, cache: ResponseCache | None = None
) -> tuple[Gateway, CallLog]:
    spec = ModelSpec(
        name="fake",
        model="openai/fake",
        api_base=url,
        timeout_s=TIMEOUT_S,
        context_window=8192,
        input_cost_per_token=0.0,
        output_cost_per_token=0.0,
        retry=retry,
    )
    log = CallLog(None)
    return Gateway(spec, log, cache), log


def _json_answer(request: dict[str, Any]) -> str:
    return json.dumps({"question": str(request["messages"][-1]["content"]), "verdict": [1, 2, 3]})


def test_every_kind_of_fault_is_survived_and_nothing_faulty_is_kept(tmp_path: Path) -> None:
    plan = FaultPlan(rate=0.5, seed=3, hold_s=TIMEOUT_S + 0.5)
    cache = ResponseCache(tmp_path / "cache")
    with FakeOpenAIServer(_json_answer, faults=plan) as server:
        gateway, log = _gateway(server.url, RetryPolicy(max_attempts=10, base_delay_s=0.01), cache)
        for i in range(16):
            answer = gateway.complete(f"question {i}", response_format={"type": "json_object"})
            assert json.loads(answer.text)["question"] == f"question {i}"
    assert set(server.injected) == set(FAULT_KINDS), server.injected
    assert log.totals.calls == 16 and len(list((tmp_path / "cache").rglob("*.json"))) == 16
    assert set(server.served.values()) == {1}  # every answer paid for once, and only once


def test_legitimate_answers_are_left_alone() -> None:
    """A 'length' cut is the model's own answer (a retry would pay for it again); prose or a
    Python-style dict in JSON mode is for the metric's tolerant parser and its re-asks."""
    answers = ['{"verdict": "the answer went on a', "Here it is: {'a': True}", "{'a': True}"]
    replies = [
        FakeReply(answers[0], finish_reason="length"),
        FakeReply(answers[1]),
        FakeReply(answers[2]),
    ]
    with FakeOpenAIServer(lambda r: replies.pop(0)) as server:
        gateway, _ = _gateway(server.url, RetryPolicy(max_attempts=3, base_delay_s=0.01))
        got = [
            gateway.complete(f"q{i}", response_format={"type": "json_object"}).text
            for i in range(3)
        ]
        assert got == answers and len(server.requests) == 3


@pytest.mark.parametrize(
    "text,cut",
    [
        ('{"a": [1, 2', True),
        ('```json\n{"a": "}', True),
        ('[{"a": 1}, {"b"', True),
        ('{"a": 1}', False),
        ('```json\n{"a": 1}\n```', False),
        ("{'a': True}", False),
        ("no JSON at all", False),
        ('{"a": 1}}', False),
    ],
)
def test_cut_off_json_is_told_from_imperfect_json(text: str, cut: bool) -> None:
    assert cut_off_json(text) is cut


def test_retry_after_is_waited_for() -> None:
    plan = FaultPlan(rate=0.6, seed=1, kinds=("429",), retry_after_s=1.0)
    with FakeOpenAIServer(faults=plan) as server:
        gateway, _ = _gateway(
            server.url, RetryPolicy(max_attempts=10, base_delay_s=0.01, max_delay_s=5.0)
        )
        for i in range(2):
            gateway.complete(f"prompt {i}")
    events = server.events
    gaps = [
        next(later.at for later in events[i + 1 :] if later.key == e.key) - e.at
        for i, e in enumerate(events)
        if e.fault == "429"
    ]
    assert gaps and min(gaps) >= 1.0, gaps  # the server's 1 s, not the 10 ms backoff


def test_the_deadline_stops_retrying_with_the_cause() -> None:
    with FakeOpenAIServer(lambda r: FakeReply(status=503, text="overloaded")) as server:
        policy = RetryPolicy(max_attempts=1000, base_delay_s=0.2, max_delay_s=0.4, deadline_s=2.0)
        gateway, log = _gateway(server.url, policy)
        started = time.perf_counter()
        cause = r"server error 503.*gave up after \d+ attempts in [\d.]+ s: retry.deadline_s=2 "
        with pytest.raises(TransientLLMError, match=cause):
            gateway.complete("anything")
        elapsed = time.perf_counter() - started
    starts = [start for start, _ in server.intervals]
    # No attempt starts past the deadline; the last wait would have passed it (waits <= 0.4 s).
    assert starts[-1] - starts[0] <= 2.0 and elapsed >= 1.6 and len(server.requests) >= 4
    assert log.totals.calls == 0


def test_an_empty_answer_that_never_mends_fails_naming_it() -> None:
    with FakeOpenAIServer(lambda r: "") as server:
        gateway, _ = _gateway(server.url, RetryPolicy(max_attempts=3, base_delay_s=0.01))
        with pytest.raises(InvalidAnswerError, match="empty answer.*gave up after 3 attempts"):
            gateway.complete("anything")


# ------------------------------------------------------------------ on_error


def _cursed_run(tmp_path: Path, store: str, on_error: str) -> tuple[str, RunResult | Exception]:
    """A run whose second document's requests always fail; its own experiment in ``store``."""
    _documents(tmp_path / "docs", second=f"{MARKER}. ")
    with FakeOpenAIServer(responder) as server:
        items = _items(
            server.url,
            tmp_path,
            on_error,
            "metrics=stats",
            f"on_error={on_error}",
            store,
            f"tracking.experiment=on_error_{on_error}",
            attempts=3,
        )
        try:
            return f"on_error_{on_error}", run(items)
        except TransientLLMError as err:
            return f"on_error_{on_error}", err


def test_on_error_continue_finishes_the_others_and_records_the_cause(
    tmp_path: Path, store: str
) -> None:
    experiment, result = _cursed_run(tmp_path, store, "continue")
    assert isinstance(result, RunResult)
    assert sorted(result.summaries) == ["gull-rock", "tobias"]
    assert (
        list(result.failures) == ["the-wren"] and "server error 500" in result.failures["the-wren"]
    )
    assert "gave up after 3 attempts" in result.failures["the-wren"]
    uri = store.split("=", 1)[1]
    client = MlflowClient(uri)
    logged = client.get_run(result.run_id)
    assert logged.info.status == "FINISHED"
    assert logged.data.metrics["documents"] == 2 and logged.data.metrics["documents_failed"] == 1
    assert logged.data.tags["runner.documents_failed"] == "1"
    assert json.loads(artifact(client, result.run_id, "failures.json")) == result.failures
    assert "warning: 1 of 3 documents failed" in format_summary(result)
    # a report lists the run but does not average it; a sweep would run the cell again
    selection = select_runs(find_runs(uri, experiment), experiment, None)
    assert selection.runs == () and selection.excluded[0].status == "FINISHED (1 document failed)"
    assert finished_run(uri, experiment, logged.data.tags["fingerprint"]) is None


def test_on_error_fail_stops_the_run(tmp_path: Path, store: str) -> None:
    experiment, result = _cursed_run(tmp_path, store, "fail")
    assert isinstance(result, TransientLLMError) and "server error 500" in str(result)
    uri = store.split("=", 1)[1]
    (failed,) = find_runs(uri, experiment)
    assert failed.status == "FAILED" and "server error 500" in failed.tags["failure"]
    selection = select_runs([failed], experiment, None)
    assert selection.runs == () and selection.excluded[0].status == "FAILED"
