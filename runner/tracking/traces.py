"""Every model call of a document as an MLflow trace: document -> step group -> step -> call.

After a job's documents are done, each document becomes one trace of the job's run, so the
run page's Traces tab shows hier's merge tree (``level 1 > merge 0 > hier/merge``), an
incremental chain (``update 3``) or the SummIt loop (``iteration 2 > summit/evaluate``,
``summit/refine``), with the judge's calls under the metric that made them. Leaves are the
calls of ``calls.jsonl`` (which stays the portable copy): the request as inputs, the answer
as outputs, tokens, cost, latency and cache hits as attributes, at their real wall times.
Calls made outside any document (a metric's setup) form one more trace, ``(job setup)``.

Why not MLflow's span API (``MlflowClient.start_trace``/``start_span``): it exports through a
process-global OpenTelemetry provider to the *global* tracking URI, one store write per span,
from a background queue. Here every call is already finished and the store is known, so the
finished spans are built directly and each trace is written to the run's store in two calls
(``start_trace``, ``log_spans``), as MLflow's own exporter does; the ``mlflow.sourceRun``
metadata links it to the run (the UI's ``attributes.run_id`` filter reads it).

Tracing is a view: ``log_traces`` never raises an ``Exception`` (a warning and the run tag
``traces.error`` say what went wrong). Requests hold no API key (``runner/llm/gateway.py``), so none
reaches a trace.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.text import count_tokens
from runner.tracking.writer import store_trace, tracing_client
from runner.types import DocumentOutcome, TraceStep, WorkItem

_LOG = logging.getLogger(__name__)
ERROR_TAG = "traces.error"
"""Run tag holding why the traces were not (all) logged."""
SETUP_TRACE = "(job setup)"
"""Name of the trace of the calls made outside any document."""
_PREVIEW = 1000  # MLflow's OSS preview length
_STEP_CALLS = ("call_ids", "evaluator_calls")  # TraceStep details that list the step's calls
_BULKY = {"text", "summary", "evaluation", "raw", "answer", "revised", "justification", "prompts"}


@dataclass
class Node:
    """One span before it is written: a document, a group, a step or a call."""

    name: str
    span_type: str
    start_ns: int = 0
    end_ns: int = 0
    inputs: Any = None
    outputs: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    error: str = ""

    def settle(self) -> None:
        """Times of a parent span: from its first child's start to its last child's end."""
        for child in self.children:
            child.settle()
        if self.children:
            self.children.sort(key=lambda c: c.start_ns)
            self.start_ns = min(c.start_ns for c in self.children)
            self.end_ns = max(c.end_ns for c in self.children)


def read_calls(path: Path | None) -> list[dict[str, Any]]:
    """The lines of ``calls.jsonl`` in the order they were recorded ([] without a file)."""
    if path is None or not path.exists():
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def call_node(line: Mapping[str, Any]) -> Node:
    """A leaf span: one gateway call, at its wall time."""
    start = int(line.get("started_at") or 0)
    request = {k: v for k, v in line["request"].items() if v is not None}
    embedding = request.get("kind") == "embedding"
    attributes: dict[str, Any] = {
        key: line.get(key)
        for key in (
            "call_id",
            "role",
            "model_alias",
            "purpose",
            "cached",
            "latency_s",
            "cost_usd",
            "prompt_tokens",
            "completion_tokens",
            "cached_prompt_tokens",
            "finish_reason",
        )
    }
    attributes["mlflow.llm.model"] = request.get("model")
    if not line.get("cached"):  # trace totals count what was paid for, as the run's metrics do
        tokens = {"input_tokens": line["prompt_tokens"], "output_tokens": line["completion_tokens"]}
        attributes["mlflow.chat.tokenUsage"] = {**tokens, "total_tokens": sum(tokens.values())}
        attributes["mlflow.llm.cost"] = {"total_cost": line["cost_usd"]}
    answer = line.get("response", "")
    outputs = (
        answer
        if embedding
        else {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": line.get("finish_reason"),
                }
            ]
        }
    )
    end = start + round(float(line.get("latency_s") or 0) * 1e9)
    kind = "EMBEDDING" if embedding else "CHAT_MODEL"
    return Node(line.get("purpose") or line["role"], kind, start, end, request, outputs, attributes)


def _family(purpose: str) -> str:
    return (purpose or "call").split("/", 1)[0]


def _step_index(trace: Iterable[TraceStep]) -> dict[str, int]:
    """call_id -> position of the trace step that made it."""
    found: dict[str, int] = {}
    for position, step in enumerate(trace):
        ids = [step.call_id] + [i for key in _STEP_CALLS for i in step.detail.get(key) or ()]
        found.update({call_id: position for call_id in ids if call_id})
    return found


def _step_node(step: TraceStep) -> Node:
    """A step span: its name says what it did and where ('merge 2', 'iteration 3')."""
    detail = step.detail
    number = next((detail[k] for k in ("iteration", "index", "child") if k in detail), None)
    name = step.kind if number is None else f"{step.kind} {number}"
    facts = {k: v for k, v in detail.items() if k not in _BULKY | set(_STEP_CALLS) and _small(v)}
    outputs = detail.get("text") if "text" in detail else detail.get("revised")
    return Node(
        name,
        "CHAIN",
        inputs=detail.get("summary"),
        outputs=outputs,
        attributes={"kind": step.kind, **facts},
    )


def _small(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return len(value) <= 64 and all(_small(v) for v in value)
    if isinstance(value, str):
        return len(value) <= 200
    return value is None or isinstance(value, (bool, int, float))


def document_tree(root: Node, lines: list[dict[str, Any]], trace: tuple[TraceStep, ...]) -> Node:
    """Hang ``lines`` (one document's calls, in recorded order) under ``root``.

    A call belongs to the trace step that names it; one the trace does not name (SummIt's
    refine) joins the step of the call before it when both come from the same family of
    purposes; any other (a judge's) goes to a group named by its purpose's family ('geval').
    A step with a ``level`` sits under a ``level N`` span.
    """
    where = _step_index(trace)
    steps: dict[int, Node] = {}
    groups: dict[str, Node] = {}
    previous: tuple[int, str] | None = None
    for line in lines:
        family = _family(line.get("purpose", ""))
        position = where.get(line["call_id"])
        if position is None and previous is not None and previous[1] == family:
            position = previous[0]
        if position is None:
            previous = None
            group = groups.get(family)
            if group is None:
                kind = "EVALUATOR" if line["role"] == "judge" else "CHAIN"
                group = groups[family] = Node(family, kind)
                root.children.append(group)
            group.children.append(call_node(line))
            continue
        previous = (position, family)
        if position not in steps:
            steps[position] = _attach(root, groups, trace[position])
        steps[position].children.append(call_node(line))
    root.settle()
    return root


def _attach(root: Node, groups: dict[str, Node], step: TraceStep) -> Node:
    """A new step span, under its ``level N`` span when the step has a level."""
    node = _step_node(step)
    parent = root
    if "level" in step.detail:
        key = f"level {step.detail['level']}"
        if key not in groups:
            groups[key] = Node(key, "CHAIN", attributes={"level": step.detail["level"]})
            root.children.append(groups[key])
        parent = groups[key]
    parent.children.append(node)
    return node


def document_roots(
    items: list[WorkItem],
    outcomes: list[DocumentOutcome],
    failures: Mapping[str, str],
    lines: list[dict[str, Any]],
) -> list[tuple[Node, list[dict[str, Any]], tuple[TraceStep, ...]]]:
    """(root span, its calls, its strategy trace) per finished or failed document.

    In input order, after a trace of the job's setup calls when there are any.
    """
    by_doc: dict[str | None, list[dict[str, Any]]] = {}
    for line in lines:
        by_doc.setdefault(line.get("document"), []).append(line)
    done = {o.doc_id: o for o in outcomes}
    out = []
    for item in items:
        if item.doc_id not in done and item.doc_id not in failures:
            continue  # never started (the job stopped first)
        outcome = done.get(item.doc_id)
        inputs: dict[str, Any] = {"doc_id": item.doc_id}
        if item.source is not None:
            inputs["source_tokens"] = count_tokens(item.source.text)
        summary = outcome.result.summary if outcome else None
        error = failures.get(item.doc_id, "")
        root = Node(item.doc_id, "CHAIN", inputs=inputs, outputs=summary, error=error)
        out.append((root, by_doc.get(item.doc_id, []), outcome.result.trace if outcome else ()))
    setup = by_doc.get(None)
    if setup:
        out.insert(0, (Node(SETUP_TRACE, "CHAIN", inputs={"calls": len(setup)}), setup, ()))
    return out


# ---------------------------------------------------------------- writing to MLflow


def log_traces(
    client: Any,
    run_id: str,
    items: list[WorkItem],
    outcomes: list[DocumentOutcome],
    failures: Mapping[str, str],
    calls_file: Path | None,
) -> int:
    """One trace per document of the run (and one for setup calls); the number written.

    Never raises an ``Exception``: the traces are a view of ``calls.jsonl``, not a result. A
    document whose trace fails is skipped and the others are still written.
    """
    errors: list[str] = []
    written = 0
    try:
        tracing = tracing_client(client.tracking_uri)  # the run's store, never the global URI
        experiment_id = client.get_run(run_id).info.experiment_id
        for root, calls, trace in document_roots(items, outcomes, failures, read_calls(calls_file)):
            try:
                write_trace(tracing, experiment_id, run_id, document_tree(root, calls, trace))
                written += 1
            except Exception as err:  # noqa: BLE001 - a tracing bug must not fail the run
                errors.append(f"{root.name}: {type(err).__name__}: {err}")
    except Exception as err:  # noqa: BLE001 - nor may a store that cannot take traces
        errors.append(f"{type(err).__name__}: {err}")
    if errors:
        _LOG.warning(
            "%d MLflow trace(s) of run %s not logged; first: %s", len(errors), run_id, errors[0]
        )
        with contextlib.suppress(Exception):  # the store itself may be what failed
            client.set_tag(run_id, ERROR_TAG, " | ".join(errors)[:5000])
    return written


def write_trace(tracing: Any, experiment_id: str, run_id: str, root: Node) -> str:
    """Write one finished trace (its info, then all its spans at once); its id."""
    if not root.start_ns:
        root.start_ns = root.end_ns = time.time_ns()  # a document without calls
    trace_hex = secrets.token_hex(16)
    trace_id = f"tr-{trace_hex}"
    rows: list[dict[str, Any]] = []
    _span_rows(root, trace_hex, trace_id, None, rows)
    inputs = json.dumps(root.inputs, ensure_ascii=False)
    outputs = json.dumps(root.outputs, ensure_ascii=False)
    store_trace(
        tracing,
        experiment_id,
        trace_id,
        rows,
        start_ms=root.start_ns // 1_000_000,
        duration_ms=(root.end_ns - root.start_ns) // 1_000_000,
        failed=bool(root.error),
        previews=(inputs[:_PREVIEW], outputs[:_PREVIEW]),
        metadata={
            "mlflow.trace_schema.version": "3",
            "mlflow.sourceRun": run_id,
            "mlflow.traceInputs": inputs[:250],
            "mlflow.traceOutputs": outputs[:250],
            **_totals(root),
        },
        tags={"mlflow.traceName": root.name[:250], "runner.document": root.name[:250]},
    )
    return trace_id


def _totals(root: Node) -> dict[str, str]:
    """The trace's token usage and cost: the sums over its paid calls."""
    usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    cost = 0.0
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        for key, value in node.attributes.get("mlflow.chat.tokenUsage", {}).items():
            usage[key] += value
        cost += node.attributes.get("mlflow.llm.cost", {}).get("total_cost", 0.0)
    return {
        "mlflow.trace.tokenUsage": json.dumps(usage),
        "mlflow.trace.cost": json.dumps({"total_cost": cost}),
    }


def _span_rows(
    node: Node, trace_hex: str, trace_id: str, parent: str | None, rows: list[dict[str, Any]]
) -> None:
    """``node`` and its descendants in MLflow's span dict form (``Span.to_dict``)."""
    span_id = base64.b64encode(secrets.token_bytes(8)).decode()
    attributes = {
        "mlflow.traceRequestId": trace_id,
        "mlflow.spanType": node.span_type,
        "mlflow.spanInputs": node.inputs,
        "mlflow.spanOutputs": node.outputs,
        **({"error": node.error} if node.error else {}),
        **node.attributes,
    }
    rows.append(
        {
            "trace_id": base64.b64encode(bytes.fromhex(trace_hex)).decode(),
            "span_id": span_id,
            "parent_span_id": parent,
            "name": node.name,
            "start_time_unix_nano": node.start_ns,
            "end_time_unix_nano": max(node.end_ns, node.start_ns),
            "events": [],
            "status": {
                "code": "STATUS_CODE_ERROR" if node.error else "STATUS_CODE_OK",
                "message": node.error[:1000],
            },
            "attributes": {
                k: json.dumps(v, ensure_ascii=False) for k, v in attributes.items() if v is not None
            },
            "links": [],
        }
    )
    for child in node.children:
        _span_rows(child, trace_hex, trace_id, span_id, rows)
