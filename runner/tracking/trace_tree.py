"""A job's calls as span trees: document -> step group -> step -> call; no MLflow import.

Leaves are the lines of ``calls.jsonl``: the request as inputs, the answer as outputs,
tokens, cost, latency and cache hits as attributes, at their real wall times. A call hangs
under the strategy's trace step that made it; calls made outside any document (a metric's
setup) form one more tree, ``(job setup)``. ``runner/tracking/traces.py`` writes the trees.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.api.text import count_tokens
from runner.api.types import DocumentOutcome, TraceStep, WorkItem

SETUP_TRACE = "(job setup)"
"""Name of the trace of the calls made outside any document."""
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
