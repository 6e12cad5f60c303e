"""A gateway request as plain data: what is sent, and so what the response cache is keyed by.

Keys appear only when they are set (a repeat index, a repeat penalty, the stop flags, the
system prompt), so the cache keys of runs that do not use them stay as they were.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from runner.llm.spec import ModelSpec
from runner.types import Message


def build_request(
    spec: ModelSpec,
    messages: Sequence[Message] | str,
    *,
    model_file: str | None,
    temperature: float | None,
    max_tokens: int | None,
    stop: Sequence[str] | None,
    seed: int | None,
    sample: int,
    response_format: dict[str, Any] | None,
    repeat: int,
) -> dict[str, Any]:
    """The whole request of one completion (``temperature`` already the role's choice)."""
    if isinstance(messages, str):
        messages = [Message("user", messages)]
    if spec.system_prompt:  # unset (every API model): requests as before
        messages = with_system_prompt(list(messages), spec.system_prompt)
    request = {
        "model": spec.model,
        "model_file": model_file,
        "api_base": spec.api_base,
        "messages": [litellm_message(m, spec.model) for m in messages],
        "temperature": temperature,
        "top_p": spec.top_p,
        "max_tokens": max_tokens or spec.max_tokens,
        "seed": sample_seed(seed, sample),
        "stop": list(stop) if stop else None,
        "response_format": response_format,
        "sample": sample,
    }
    if repeat:  # only then, so the cache keys of unrepeated runs stay as they were
        request["repeat"] = repeat
    if spec.repeat_penalty is not None:  # likewise: only models that set one
        request["repeat_penalty"] = spec.repeat_penalty
    if spec.stop_on_repeated_sentence:  # likewise
        request["stop_on_repeated_sentence"] = True
    if spec.stop_on_copied_sentence:  # likewise
        request["stop_on_copied_sentence"] = True
    return request


def litellm_message(m: Message, model: str) -> dict[str, Any]:
    """Litellm's message form; a cache mark becomes Anthropic's cache_control block."""
    if m.cache and ("anthropic" in model or "claude" in model):
        block = {"type": "text", "text": m.content, "cache_control": {"type": "ephemeral"}}
        return {"role": m.role, "content": [block]}
    return {"role": m.role, "content": m.content}


def with_system_prompt(messages: list[Message], system_prompt: str) -> list[Message]:
    """The model's system prompt first: its own message, or at the head of the request's.

    A request may bring its own system message (SummIt does); the model's prompt then opens
    it, so a prompt that has one still gets the model's.
    """
    if messages and messages[0].role == "system":
        head = messages[0]
        return [Message("system", f"{system_prompt}\n\n{head.content}", head.cache), *messages[1:]]
    return [Message("system", system_prompt), *messages]


def sample_seed(seed: int | None, sample: int) -> int | None:
    """The seed of one sample: the run's seed for sample 0, a distinct one for each other.

    With one seed for every sample, a seeded provider (llama.cpp, OpenAI) answers repeated
    samples of the same prompt identically, and G-Eval's 20 samples or a regeneration at
    temperature 1 would be one answer counted many times.
    """
    if seed is None or sample == 0:
        return seed
    digest = hashlib.sha256(f"{seed}:{sample}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF
