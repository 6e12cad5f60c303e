"""Every model call of a document is an MLflow trace, as the UI's Traces tab will show it.

A real job (hier over two documents, two documents at once, against the loopback server with
a recognisable API key) runs end to end (``run_experiment``, what ``python -m runner`` calls);
then a real ``mlflow server`` serves its store and the traces are read back through the REST
endpoints the UI uses. Each assertion compares them with what the run wrote independently of
the tracing code: ``calls.jsonl`` (the gateway's own log) and ``traces/<doc>.json`` (the
strategy's own trace).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.judging import run_units
from runner.api.types import Document, DocumentOutcome, StrategyResult, TraceStep, WorkItem
from runner.llm.call_log import DOCUMENT, for_document
from runner.tracking import traces as mlflow_traces
from runner.tracking.traces import SETUP_TRACE, Node, document_roots, document_tree, log_traces
from tests.helpers.artifacts import artifact
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.ports import free_port
from tests.runner.test_app import overrides, run
from tests.strategies.conftest import responder

SECRET = "sk-test-TRACES-DO-NOT-LEAK-4b9d2e71"
LLM_TYPES = {"CHAT_MODEL", "LLM", "EMBEDDING"}


@dataclass
class Served:
    """The finished run, its independent records, and what the server answered about it."""

    run_id: str
    calls: list[dict[str, Any]]
    """calls.jsonl of the run, as the gateway wrote it."""
    steps: dict[str, list[dict[str, Any]]]
    """doc_id -> traces/<doc>.json of the run, as the strategy returned it."""
    summaries: dict[str, str]
    traces: list[dict[str, Any]]
    """Trace infos from the UI's search (filter ``attributes.run_id``)."""
    spans: dict[str, list[dict[str, Any]]]
    """trace name -> its spans (attributes JSON-decoded), from the UI's trace endpoint."""
    bodies: str
    """Every REST answer, verbatim, to scan for the key."""
    root: Path
    authorizations: list[str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("traces")
    uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
    stores = {"tracking.uri": uri, "cache.dir": str(root / "cache")}
    with (
        FakeOpenAIServer(responder(), latency_s=0.02) as server,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("RUNNER_TEST_KEY", SECRET)
        result = run(
            overrides(
                server.url,
                stores,
                "strategy=hier",
                "chunk=512",
                "data.limit=2",
                "model.api_key_env=RUNNER_TEST_KEY",
            )
        )
        authorizations = list(server.authorizations)
    run_id = result.run_id
    client = MlflowClient(uri)
    calls = [json.loads(line) for line in _artifact(client, run_id, "calls.jsonl").splitlines()]
    summaries = json.loads(_artifact(client, run_id, "summaries.json"))
    steps = {doc: json.loads(_artifact(client, run_id, f"traces/{doc}.json")) for doc in summaries}
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with _mlflow_server(uri, root, env) as api:
        experiment = api(
            "GET", "/ajax-api/2.0/mlflow/experiments/get-by-name?experiment_name=summarization"
        )["experiment"]["experiment_id"]
        location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment}}
        found = api(
            "POST",
            "/ajax-api/3.0/mlflow/traces/search",  # what the run page's Traces tab asks
            {
                "locations": [location],
                "filter": f"attributes.run_id = '{run_id}'",
                "max_results": 100,
            },
        )
        traces = found.get("traces", [])
        spans = {}
        for info in traces:
            query = urllib.parse.urlencode({"request_id": info["trace_id"]})
            data = api("GET", f"/ajax-api/3.0/mlflow/get-trace-artifact?{query}")
            spans[info["tags"]["mlflow.traceName"]] = [_decoded(s) for s in data["spans"]]
        bodies = "\n".join(api.bodies)
    yield Served(run_id, calls, steps, summaries, traces, spans, bodies, root, authorizations)


def _artifact(client: MlflowClient, run_id: str, path: str) -> str:
    return artifact(client, run_id, path)


def _decoded(span: dict[str, Any]) -> dict[str, Any]:
    return {**span, "attributes": {k: json.loads(v) for k, v in span["attributes"].items()}}


class _Api:
    """JSON over HTTP to the served store; keeps every body it receives."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.bodies: list[str] = []

    def __call__(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode("utf-8")
        self.bodies.append(text)
        return json.loads(text)


class _mlflow_server:  # lower case: used as a context manager, like a function
    """``mlflow server`` on 127.0.0.1 over the store, until the block ends."""

    def __init__(self, uri: str, root: Path, env: dict[str, str]) -> None:
        port = free_port()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--backend-store-uri",
                uri,
                "--artifacts-destination",
                str(root / "served-artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=root,
            env=env,
        )
        self.api = _Api(f"http://127.0.0.1:{port}")

    def __enter__(self) -> _Api:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(self.api.base + "/health", timeout=5).close()
                return self.api
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.__exit__()
                    raise AssertionError("mlflow server did not start") from None
                time.sleep(0.5)

    def __exit__(self, *_: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _children(spans: list[dict[str, Any]], parent: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(
        (s for s in spans if s["parent_span_id"] == parent["span_id"]),
        key=lambda s: s["start_time_unix_nano"],
    )


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _strings(item)]


def _root(spans: list[dict[str, Any]]) -> dict[str, Any]:
    (root,) = [s for s in spans if not s["parent_span_id"]]
    return root


# ---------------------------------------------------------------- the served run


def test_the_run_has_one_trace_per_document(served: Served) -> None:
    assert len(served.summaries) == 2
    names = sorted(t["tags"]["mlflow.traceName"] for t in served.traces)
    assert names == sorted(served.summaries)
    for info in served.traces:
        assert info["trace_metadata"]["mlflow.sourceRun"] == served.run_id
        assert info["state"] == "OK"
        root = _root(served.spans[info["tags"]["mlflow.traceName"]])
        assert root["attributes"]["mlflow.spanOutputs"] == served.summaries[root["name"]]
        assert root["attributes"]["mlflow.spanInputs"]["doc_id"] == root["name"]


def test_every_call_is_attributed_to_its_document(served: Served) -> None:
    per_doc = Counter(line["document"] for line in served.calls)
    assert set(per_doc) == set(
        served.summaries
    )  # hier's level 0 runs in its own pool: still counted
    for doc, steps in served.steps.items():
        named = {i for s in steps for i in [s.get("call_id"), *s.get("call_ids", [])] if i}
        assert named == {line["call_id"] for line in served.calls if line["document"] == doc}


def test_each_call_is_one_llm_span_with_its_prompt_answer_and_numbers(served: Served) -> None:
    lines = {line["call_id"]: line for line in served.calls}
    for doc, spans in served.spans.items():
        leaves = [s for s in spans if s["attributes"]["mlflow.spanType"] in LLM_TYPES]
        expected = [line for line in served.calls if line["document"] == doc]
        assert len(leaves) == len(expected) > 0
        assert sorted(s["attributes"]["call_id"] for s in leaves) == sorted(
            c["call_id"] for c in expected
        )
        for span in leaves:
            line = lines[span["attributes"]["call_id"]]
            assert not _children(spans, span)
            prompt = line["request"]["messages"][-1]["content"]
            assert len(prompt) > 100 and prompt in _strings(span["attributes"]["mlflow.spanInputs"])
            answers = _strings(span["attributes"]["mlflow.spanOutputs"])
            assert line["response"] and line["response"] in answers
            assert span["name"] == line["purpose"]
            assert span["start_time_unix_nano"] == line["started_at"]
            duration = span["end_time_unix_nano"] - span["start_time_unix_nano"]
            assert abs(duration - line["latency_s"] * 1e9) < 1e6
            assert duration > 0.015e9 or line["cached"]  # the server answers after 20 ms
            for key in ("prompt_tokens", "completion_tokens", "cost_usd", "cached", "role"):
                assert span["attributes"][key] == line[key], key
        info = next(t for t in served.traces if t["tags"]["mlflow.traceName"] == doc)
        usage = json.loads(info["trace_metadata"]["mlflow.trace.tokenUsage"])
        assert usage["input_tokens"] == sum(c["prompt_tokens"] for c in expected if not c["cached"])


def test_the_merge_tree_follows_the_strategy_trace(served: Served) -> None:
    for doc, steps in served.steps.items():
        spans = served.spans[doc]
        root = _root(spans)
        by_level: dict[int, list[dict[str, Any]]] = {}
        for step in steps:
            if "level" in step:
                by_level.setdefault(step["level"], []).append(step)
        assert max(by_level) >= 1, "the documents should need at least one merge level"
        levels = {s["name"]: s for s in _children(spans, root) if s["name"].startswith("level ")}
        assert sorted(levels) == [f"level {n}" for n in sorted(by_level)]
        for level, level_steps in by_level.items():
            kids = _children(spans, levels[f"level {level}"])
            assert len(kids) == len(level_steps)
            merges = sorted(
                (s for s in level_steps if s["kind"] == "merge"), key=lambda s: s["index"]
            )
            merge_spans = sorted(
                (k for k in kids if k["attributes"]["kind"] == "merge"),
                key=lambda k: k["attributes"]["index"],
            )
            assert [m["attributes"]["children"] for m in merge_spans] == [
                m["children"] for m in merges
            ]
            for step, span in zip(merges, merge_spans, strict=True):
                calls = [c["attributes"]["call_id"] for c in _children(spans, span)]
                assert sorted(calls) == sorted(step["call_ids"])
                assert all(c["name"] == "hier/merge" for c in _children(spans, span))


def test_the_api_key_never_reaches_a_trace(served: Served) -> None:
    assert served.authorizations and set(served.authorizations) == {
        f"Bearer {SECRET}"
    }  # it was in use
    assert served.traces and SECRET not in served.bodies and "4b9d2e71" not in served.bodies
    leaked = [
        p for p in served.root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()
    ]
    assert leaked == []


# ---------------------------------------------------------------- pieces


def test_judge_units_run_in_a_pool_keep_the_document() -> None:
    with for_document("doc-7"):
        seen = run_units([DOCUMENT.get for _ in range(6)], SimpleNamespace(concurrency=4))
    assert seen == ["doc-7"] * 6 and DOCUMENT.get() is None


def _line(call_id: str, purpose: str, start: int, role: str = "model") -> dict[str, Any]:
    return {
        "call_id": call_id,
        "purpose": purpose,
        "role": role,
        "started_at": start,
        "latency_s": 0.5,
        "cached": False,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost_usd": 0.0,
        "request": {"model": "m", "messages": [{"role": "user", "content": "p"}]},
        "response": "a",
    }


def test_summit_refine_calls_join_their_iteration_and_judge_calls_their_metric() -> None:
    second = 10**9
    lines = [
        _line("d", "summit/draft", 0),
        _line("e1", "summit/evaluate", second),
        _line("r1", "summit/refine", 2 * second),
        _line("e2", "summit/evaluate", 3 * second),
        _line("g", "geval/coherence", 4 * second, role="judge"),
    ]
    trace = (
        TraceStep("draft", "d", {"text": "x"}),
        TraceStep("iteration", "e1", {"iteration": 1, "evaluator_calls": ["e1"]}),
        TraceStep("iteration", "e2", {"iteration": 2, "evaluator_calls": ["e2"]}),
        TraceStep("stop", "", {"reason": "keep"}),
    )
    root = document_tree(Node("doc", "CHAIN"), lines, trace)
    shape = {c.name: [g.name for g in c.children] for c in root.children}
    assert shape == {
        "draft": ["summit/draft"],
        "iteration 1": ["summit/evaluate", "summit/refine"],
        "iteration 2": ["summit/evaluate"],
        "geval": ["geval/coherence"],
    }
    assert (root.start_ns, root.end_ns) == (0, 4 * second + second // 2)
    assert root.children[-1].span_type == "EVALUATOR"


def test_a_tracing_failure_never_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run_id = client.create_run(client.create_experiment("t")).info.run_id

    def broken(*_: object) -> str:
        raise RuntimeError("store said no")

    monkeypatch.setattr(mlflow_traces, "write_trace", broken)
    calls = tmp_path / "calls.jsonl"
    calls.write_text(
        json.dumps({**_line("c", "baseline", 1), "document": "d"}) + "\n", encoding="utf-8"
    )
    outcome = DocumentOutcome("d", StrategyResult("s", (TraceStep("summarize", "c"),), {}), {})
    assert log_traces(client, run_id, [WorkItem("d", None)], [outcome], {}, calls) == 0
    assert (
        client.get_run(run_id).data.tags[mlflow_traces.ERROR_TAG]
        == "d: RuntimeError: store said no"
    )


def test_a_trace_the_store_refuses_leaves_the_others_of_its_batch_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documents' spans go in one store call; when it fails, each trace alone: the bad one
    is named in the run's tag, the others are whole."""
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment_id = client.create_experiment("t")
    run_id = client.create_run(experiment_id).info.run_id
    real = mlflow_traces.log_spans
    batches: list[list[str]] = []

    def picky(tracing: Any, experiment: str, spans: list[Any]) -> None:
        roots = sorted(s.name for s in spans if s.parent_id is None)
        batches.append(roots)
        if "b" in roots:
            raise RuntimeError("no b")
        real(tracing, experiment, spans)

    monkeypatch.setattr(mlflow_traces, "log_spans", picky)
    calls = tmp_path / "calls.jsonl"
    lines = [{**_line(d, "baseline", n), "document": d} for n, d in enumerate("abc", start=1)]
    calls.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    outcomes = [
        DocumentOutcome(d, StrategyResult("s", (TraceStep("summarize", d),), {}), {}) for d in "abc"
    ]
    items = [WorkItem(d, None) for d in "abc"]
    assert log_traces(client, run_id, items, outcomes, {}, calls) == 2
    assert batches == [["a", "b", "c"], ["a"], ["b"], ["c"]]  # one call, then each alone
    assert client.get_run(run_id).data.tags[mlflow_traces.ERROR_TAG] == "b: RuntimeError: no b"
    stored = client.search_traces(locations=[experiment_id])
    assert sorted(t.info.tags["runner.document"] for t in stored) == ["a", "c"]
    assert all(len(t.data.spans) == 3 for t in stored)  # document > strategy > call, whole


def test_a_failed_document_and_the_setup_calls_get_traces_too() -> None:
    items = [
        WorkItem("a", Document("a", "one two")),
        WorkItem("b", Document("b", "three")),
        WorkItem("c", None),
    ]
    lines = [
        {**_line("s", "geval/steps/coherence", 0, role="judge"), "document": None},
        {**_line("x", "hier/level0", 1), "document": "b"},
        {**_line("y", "hier/level0", 2), "document": "b"},
    ]
    roots = document_roots(items, [], {"b": "LLMError: boom"}, lines)
    assert [root.name for root, _, _ in roots] == [SETUP_TRACE, "b"]  # a and c never ran
    failed = document_tree(*roots[1])
    assert failed.error == "LLMError: boom" and failed.inputs == {"doc_id": "b", "source_tokens": 1}
    assert [(g.name, len(g.children)) for g in failed.children] == [("hier", 2)]
