"""A plugin's own threads keep the document: ``runner.api.thread_map`` and ``ThreadPool``.

A loose-module strategy summarizes each chunk from a thread of its own, then joins the parts
in the job's thread; a real job runs it over two documents against the loopback server, and
``calls.jsonl`` (the gateway's log) says which document each call was for. The same strategy
on a bare ``ThreadPoolExecutor`` shows what the helper prevents: its threaded calls belong to
no document.
"""

from __future__ import annotations

import json
import types
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from mlflow.tracking import MlflowClient

from runner.api import LLM, Chunk, StrategyResult, ThreadPool, TraceStep, thread_map
from runner.config.run_config import build_run_config
from runner.llm.call_log import DOCUMENT, for_document
from runner.run.lifecycle import run_experiment
from tests.helpers.artifacts import artifact
from tests.helpers.fake_server import FakeOpenAIServer, echo_responder
from tests.helpers.plugins import register
from tests.runner.config.test_config import composed
from tests.runner.test_app import overrides

T = TypeVar("T")
R = TypeVar("R")
Mapper = Callable[[Callable[[T], R], Iterable[T], int], list[R]]


def _bare_map(fn: Callable[[T], R], items: Iterable[T], max_workers: int) -> list[R]:
    """What a plugin would write without the helper."""
    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        return list(pool.map(fn, items))


def _strategy(mapper: Mapper[Chunk, Any]) -> types.ModuleType:
    def summarize(chunks: list[Chunk], model: LLM) -> StrategyResult:
        def part(chunk: Chunk) -> str:
            return model.complete(f"Summarize: {chunk.text[:200]}", purpose="part").text

        parts = mapper(part, chunks, 4)
        joined = model.complete("Join: " + " ".join(parts), purpose="join")
        return StrategyResult(joined.text, (TraceStep("join", joined.call_id),), {})

    module = types.ModuleType("threaded_parts")
    module.ROLES = ("model",)  # type: ignore[attr-defined]
    module.IGNORES = {}  # type: ignore[attr-defined]
    module.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    module.summarize = summarize  # type: ignore[attr-defined]
    return module


def _calls_of_a_job(
    mapper: Mapper[Chunk, Any], monkeypatch: pytest.MonkeyPatch, stores: dict[str, str]
) -> tuple[list[dict[str, Any]], set[str]]:
    """calls.jsonl of a two-document job of the strategy, and the job's document ids."""
    register(monkeypatch, "strategy", "threaded_parts", _strategy(mapper))
    with FakeOpenAIServer(echo_responder) as server:
        items = overrides(server.url, stores, "chunk=512", "data.limit=2", "cache.enabled=false")
        raw = composed(*items)
        raw["strategy"] = {"name": "threaded_parts"}
        result = run_experiment(build_run_config(raw, tuple(items)))
    client = MlflowClient(stores["tracking.uri"])
    calls_file = artifact(client, result.run_id, "calls.jsonl")
    calls = [json.loads(line) for line in calls_file.splitlines()]
    return calls, set(json.loads(artifact(client, result.run_id, "summaries.json")))


def test_calls_from_thread_map_are_their_documents(
    monkeypatch: pytest.MonkeyPatch, stores: dict[str, str]
) -> None:
    calls, documents = _calls_of_a_job(thread_map, monkeypatch, stores)
    assert len(documents) == 2
    parts = Counter(c["document"] for c in calls if c["purpose"] == "part")
    joins = Counter(c["document"] for c in calls if c["purpose"] == "join")
    assert set(parts) == documents and min(parts.values()) >= 2  # threaded: several chunks each
    assert joins == {doc: 1 for doc in documents}


def test_calls_from_a_bare_pool_belong_to_no_document(
    monkeypatch: pytest.MonkeyPatch, stores: dict[str, str]
) -> None:
    calls, documents = _calls_of_a_job(_bare_map, monkeypatch, stores)
    assert {c["document"] for c in calls if c["purpose"] == "part"} == {None}
    assert {c["document"] for c in calls if c["purpose"] == "join"} == documents


def test_thread_pool_submit_and_map_run_in_the_submitters_context() -> None:
    with for_document("doc-3"), ThreadPool(max_workers=3) as pool:
        submitted = [pool.submit(DOCUMENT.get).result() for _ in range(3)]
        mapped = list(pool.map(lambda _: DOCUMENT.get(), range(5)))
    assert submitted == ["doc-3"] * 3 and mapped == ["doc-3"] * 5 and DOCUMENT.get() is None


def test_thread_map_keeps_order_and_raises_the_first_error_in_item_order() -> None:
    assert thread_map(lambda n: n * n, range(7), 3) == [0, 1, 4, 9, 16, 25, 36]
    assert thread_map(lambda n: n, [], 3) == []

    def fail_on_odd(n: int) -> int:
        if n % 2:
            raise ValueError(f"odd {n}")
        return n

    with pytest.raises(ValueError, match="odd 1"):
        thread_map(fail_on_odd, range(6), 2)
