"""A scripted model as a litellm custom provider (``scripted/<key>``), for tests.

inspect_ai's ``mockllm`` is a provider for the same reason: a fake behind the real API
exercises everything around it. A scripted model goes through the real gateway, so tests
of strategies and metrics also run its cache, call log, limits and accounting. The
gateway registers ``PROVIDER`` with litellm when it first imports litellm; build a
scripted gateway with ``tests.helpers.scripted_llm.scripted_llm``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ModelResponse

from runner.api.text import count_tokens
from runner.api.types import Message

Script = Callable[[list[Message], dict[str, Any]], str]
"""(messages, options) -> answer.

options: max_tokens, temperature, stop, sample, purpose, response_format.
"""


class ScriptedProvider(CustomLLM):
    """Answers ``scripted/<key>`` with the script registered under ``key``."""

    def __init__(self) -> None:
        """No scripts yet: each test registers its own (``register``)."""
        super().__init__()
        self._scripts: dict[str, Script] = {}
        self._lock = threading.Lock()

    def register(self, key: str, script: Script) -> None:
        """Make ``scripted/<key>`` answer with ``script``."""
        with self._lock:
            self._scripts[key] = script

    def completion(
        self, model: str, messages: list[Any], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        """Run the script; finish_reason is 'length' when the answer exceeds max_tokens."""
        params = dict(kwargs.get("optional_params") or {})
        meta = _metadata(kwargs)
        options: dict[str, Any] = {
            "max_tokens": params.get("max_tokens"),
            "temperature": params.get("temperature"),
            "stop": params.get("stop"),
            "sample": int(meta.get("sample", 0)),
            "purpose": str(meta.get("purpose", "")),
            "response_format": params.get("response_format"),
        }
        msgs = [Message(str(m["role"]), message_text(m["content"])) for m in messages]
        with self._lock:
            script = self._scripts[model.split("/", 1)[-1]]
        text = script(msgs, options)
        prompt = sum(count_tokens(m.content) for m in msgs)
        out = count_tokens(text)
        cap = options["max_tokens"]
        return ModelResponse(
            id=f"scripted-{uuid.uuid4().hex[:12]}",
            created=int(time.time()),
            model=model,
            choices=[
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "length" if cap and out > cap else "stop",
                }
            ],
            usage={"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
        )


def _metadata(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The gateway's sample index and purpose, wherever litellm put the metadata."""
    litellm_params = kwargs.get("litellm_params") or {}
    return dict(litellm_params.get("metadata") or kwargs.get("metadata") or {})


def message_text(content: Any) -> str:
    """A message's text, whether a string or a list of content blocks (Anthropic's form)."""
    if isinstance(content, list):  # content blocks
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


PROVIDER = ScriptedProvider()
