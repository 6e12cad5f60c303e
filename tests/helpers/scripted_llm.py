"""Test helpers that build real gateways: a scripted model, and its calls read back.

Used by tests and benchmarks; nothing in a run imports it.
"""

from __future__ import annotations

import uuid
from typing import Any

from runner.api.types import Message
from runner.llm import scripted as fake_llm
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.retry import RetryPolicy
from runner.llm.spec import SCRIPTED_PREFIX, ModelSpec


def scripted_llm(
    script: fake_llm.Script,
    context_window: int = 8192,
    name: str = "scripted",
    concurrency: int = 8,
    cache: ResponseCache | None = None,
    role: str = "model",
    temperature: float | None = 0.5,
) -> Gateway:
    """The real gateway in front of ``script``; its call log keeps every call in memory."""
    key = f"{name}-{uuid.uuid4().hex[:10]}"
    fake_llm.PROVIDER.register(key, script)
    spec = ModelSpec(
        name=name,
        model=SCRIPTED_PREFIX + key,
        context_window=context_window,
        concurrency=concurrency,
        temperature=temperature,
        retry=RetryPolicy(max_attempts=1),
    )
    return Gateway(spec, CallLog(None, keep=True), cache, role=role)


def calls_of(llm: Gateway) -> list[tuple[list[Message], dict[str, Any]]]:
    """(messages, options) of every call the gateway logged, in order (cache hits included)."""
    out = []
    for entry in llm.call_log.entries:
        request = entry["request"]
        messages = [
            Message(m["role"], fake_llm.message_text(m["content"]), cache=_marked(m["content"]))
            for m in request["messages"]
        ]
        options = {
            "max_tokens": request["max_tokens"],
            "temperature": request["temperature"],
            "stop": request["stop"],
            "sample": request["sample"],
            "purpose": entry["purpose"],
        }
        out.append((messages, options))
    return out


def _marked(content: Any) -> bool:
    """True when the gateway turned a cache mark into Anthropic's cache_control block."""
    return isinstance(content, list) and any(
        "cache_control" in b for b in content if isinstance(b, dict)
    )
