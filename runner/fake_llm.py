"""A scripted in-memory model implementing ``types.LLM``, for unit tests of strategies
and metrics (inspect_ai's mockllm idea). Integration tests use ``fake_server`` instead,
so the real gateway path is exercised there.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence

from runner.text import count_tokens
from runner.types import Completion, Message

Script = Callable[[list[Message], dict[str, object]], str]


class ScriptedLLM:
    """Answers with ``script(messages, options)``; records every call."""

    def __init__(
        self, script: Script, context_window: int = 8192, name: str = "scripted", concurrency: int = 8
    ) -> None:
        self.script = script
        self.context_window = context_window
        self.name = name
        self.concurrency = concurrency
        self.calls: list[tuple[list[Message], dict[str, object]]] = []
        self._lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        """cl100k_base tokens, as the real gateway counts."""
        return count_tokens(text)

    def complete(
        self,
        messages: Sequence[Message] | str,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        sample: int = 0,
        purpose: str = "",
    ) -> Completion:
        """Run the script; finish_reason is 'length' when the answer exceeds max_tokens."""
        msgs = [Message("user", messages)] if isinstance(messages, str) else list(messages)
        options: dict[str, object] = {
            "max_tokens": max_tokens, "temperature": temperature, "sample": sample, "purpose": purpose,
        }
        with self._lock:
            self.calls.append((msgs, options))
        text = self.script(msgs, options)
        prompt = sum(count_tokens(m.content) for m in msgs)
        out = count_tokens(text)
        return Completion(
            text=text,
            prompt_tokens=prompt,
            completion_tokens=out,
            cost_usd=0.0,
            latency_s=0.0,
            cached=False,
            call_id=uuid.uuid4().hex,
            finish_reason="length" if max_tokens and out > max_tokens else "stop",
        )
