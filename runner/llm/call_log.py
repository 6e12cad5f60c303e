"""Accounting of every model call: totals in memory, one JSON line per call on disk.

Shared by the summarizer's and the judge's gateways of a job, so the totals and
``calls.jsonl`` cover both. Secrets never reach it: requests hold no API key.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.api.types import Completion
from runner.llm.budget import Budget

DOCUMENT: ContextVar[str | None] = ContextVar("runner_document", default=None)
"""The document whose work makes the current call; None outside any (e.g. a metric's setup).

A context variable, not a gateway attribute: one gateway serves every document at once.
Threads do not inherit it, so code that fans a document's calls out to a pool uses
``runner.api.threads`` (``ThreadPool``, ``thread_map``), which runs each task in a copy of the
submitter's context.
"""


@contextmanager
def for_document(doc_id: str) -> Iterator[None]:
    """Attribute every call made inside (in this context) to ``doc_id``."""
    token = DOCUMENT.set(doc_id)
    try:
        yield
    finally:
        DOCUMENT.reset(token)


@dataclass
class CallTotals:
    """Running sums over a job's calls."""

    calls: int = 0
    """Calls that reached a model (cache hits excluded)."""
    cache_hits: int = 0
    """Calls served from the response cache."""
    prompt_tokens: int = 0
    """Prompt tokens of real calls."""
    completion_tokens: int = 0
    """Generated tokens of real calls."""
    cached_prompt_tokens: int = 0
    """Prompt tokens the provider reported as served from its prefix cache."""
    cost_usd: float = 0.0
    """Cost of real calls in USD."""
    model_seconds: float = 0.0
    """Sum of call latencies."""


class CallLog:
    """Thread-safe recorder; ``on_call`` lets a progress display follow along."""

    def __init__(
        self,
        path: Path | None = None,
        on_call: Callable[[CallTotals, dict[str, Any]], None] | None = None,
        keep: bool = False,
        budget: Budget | None = None,
    ) -> None:
        """Record to ``path`` (None: totals only), telling ``on_call`` after every call."""
        self.path = path
        self.totals = CallTotals()
        self.on_call = on_call
        self.entries: list[dict[str, Any]] = []
        """Every call's line, in order, when ``keep`` (tests read them back)."""
        self._keep = keep
        self.budget = budget
        """Spending limits, charged for every real call (``runner/llm/budget.py``)."""
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("", encoding="utf-8")

    def record(
        self, role: str, alias: str, request: dict[str, Any], c: Completion, purpose: str
    ) -> None:
        """Add one call to the totals and to calls.jsonl (and to ``entries`` when kept)."""
        line = {
            "call_id": c.call_id,
            "document": DOCUMENT.get(),
            "started_at": time.time_ns() - round(c.latency_s * 1e9),  # wall ns when the call began
            "role": role,
            "model_alias": alias,
            "purpose": purpose,
            "cached": c.cached,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "cached_prompt_tokens": c.cached_prompt_tokens,
            "cost_usd": c.cost_usd,
            "latency_s": round(c.latency_s, 4),
            "finish_reason": c.finish_reason,
            "request": request,
            "response": c.text,
            **({"batch_id": c.batch_id} if c.batch_id else {}),
        }
        with self._lock:
            t = self.totals
            if c.cached:
                t.cache_hits += 1
            else:
                t.calls += 1
                t.prompt_tokens += c.prompt_tokens
                t.completion_tokens += c.completion_tokens
                t.cached_prompt_tokens += c.cached_prompt_tokens
                t.cost_usd += c.cost_usd
                t.model_seconds += c.latency_s
            if self._keep:
                self.entries.append(line)
            if self.budget is not None and not c.cached:
                self.budget.charge(c.cost_usd)
            if self.path is not None:
                with open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            if self.on_call is not None:
                self.on_call(t, line)
