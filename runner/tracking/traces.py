"""Every model call of a document as an MLflow trace: document -> step group -> step -> call.

After a job's documents are done, each document becomes one trace of the job's run, so the
run page's Traces tab shows hier's merge tree (``level 1 > merge 0 > hier/merge``), an
incremental chain (``update 3``) or the SummIt loop (``iteration 2 > summit/evaluate``,
``summit/refine``), with the judge's calls under the metric that made them. Leaves are the
calls of ``calls.jsonl`` (which stays the portable copy): the request as inputs, the answer
as outputs, tokens, cost, latency and cache hits as attributes, at their real wall times.
Calls made outside any document (a metric's setup) form one more trace, ``(job setup)``.
The span trees are built in ``runner/tracking/trace_tree.py``; this module writes them.

Why not MLflow's span API (``MlflowClient.start_trace``/``start_span``): it exports through a
process-global OpenTelemetry provider to the *global* tracking URI, one store write per span,
from a background queue. Here every call is already finished and the store is known, so the
finished spans are built directly and written to the run's store as MLflow's own exporter
does: each trace's info (``start_trace``), then its spans (``log_spans``), the spans of up to
``SPAN_BATCH`` traces in one call; the ``mlflow.sourceRun`` metadata links each trace to the
run (the UI's ``attributes.run_id`` filter reads it).

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.api.types import DocumentOutcome, WorkItem
from runner.tracking.trace_tree import (
    SETUP_TRACE,
    Node,
    document_roots,
    document_tree,
    read_calls,
)
from runner.tracking.writer import log_spans, start_trace, tracing_client

__all__ = ["ERROR_TAG", "SETUP_TRACE", "Node", "document_roots", "document_tree", "log_traces"]

_LOG = logging.getLogger(__name__)
ERROR_TAG = "traces.error"
"""Run tag holding why the traces were not (all) logged."""
_PREVIEW = 1000  # MLflow's OSS preview length
SPAN_BATCH = 50
"""Traces whose spans go to the store in one ``log_spans`` call (one transaction): one call per
trace was a third of the time a job of 96 given summaries spent writing its traces."""


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
        pending: list[tuple[str, list[Any]]] = []
        for root, calls, trace in document_roots(items, outcomes, failures, read_calls(calls_file)):
            try:
                tree = document_tree(root, calls, trace)
                pending.append((root.name, write_trace(tracing, experiment_id, run_id, tree)))
            except Exception as err:  # noqa: BLE001 - a tracing bug must not fail the run
                errors.append(f"{root.name}: {type(err).__name__}: {err}")
            if len(pending) == SPAN_BATCH:
                written += _flush(tracing, experiment_id, pending, errors)
                pending = []
        written += _flush(tracing, experiment_id, pending, errors)
    except Exception as err:  # noqa: BLE001 - nor may a store that cannot take traces
        errors.append(f"{type(err).__name__}: {err}")
    if errors:
        _LOG.warning(
            "%d MLflow trace(s) of run %s not logged; first: %s", len(errors), run_id, errors[0]
        )
        with contextlib.suppress(Exception):  # the store itself may be what failed
            client.set_tag(run_id, ERROR_TAG, " | ".join(errors)[:5000])
    return written


def _flush(
    tracing: Any, experiment_id: str, pending: list[tuple[str, list[Any]]], errors: list[str]
) -> int:
    """The pending traces' spans in one store call; the traces written.

    If that call fails (one transaction: nothing of it is kept), each trace's spans are
    written alone, so one bad trace leaves the others whole.
    """
    if not pending:
        return 0
    try:
        log_spans(tracing, experiment_id, [span for _, spans in pending for span in spans])
        return len(pending)
    except Exception:  # noqa: BLE001 - which trace was it? each alone says
        written = 0
        for name, spans in pending:
            try:
                log_spans(tracing, experiment_id, spans)
                written += 1
            except Exception as err:  # noqa: BLE001 - a tracing bug must not fail the run
                errors.append(f"{name}: {type(err).__name__}: {err}")
        return written


def write_trace(tracing: Any, experiment_id: str, run_id: str, root: Node) -> list[Any]:
    """Write one finished trace's info; its spans, for ``log_spans`` (``_flush``)."""
    if not root.start_ns:
        root.start_ns = root.end_ns = time.time_ns()  # a document without calls
    trace_hex = secrets.token_hex(16)
    trace_id = f"tr-{trace_hex}"
    rows: list[dict[str, Any]] = []
    _span_rows(root, trace_hex, trace_id, None, rows)
    inputs = json.dumps(root.inputs, ensure_ascii=False)
    outputs = json.dumps(root.outputs, ensure_ascii=False)
    return start_trace(
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
