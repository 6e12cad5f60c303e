"""A gateway request as plain data, and the response cache's key of it: two separate things.

``Request`` is what one completion sends to litellm. ``cache_fields`` is how the response
cache (and ``calls.jsonl``) knows that request: the same values plus what is not sent but
changes or tells apart an answer (the local model's file, the sample index, the repeat
index), in a form that must never change, or every cache on disk would miss
(``tests/runner/llm/test_cache_keys_golden.py`` pins it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.api.types import Message
from runner.llm.spec import ModelSpec


@dataclass(frozen=True)
class Request:
    """What one completion asks of litellm (its keyword arguments, less the call's plumbing)."""

    model: str
    """The litellm model string as configured ('local/<name>' before the role's instance)."""
    api_base: str | None
    """The OpenAI-compatible server, if any."""
    messages: list[dict[str, Any]]
    """litellm's message form (Anthropic's cache_control blocks included)."""
    temperature: float | None
    """The role's or the caller's temperature."""
    top_p: float | None
    """Nucleus sampling."""
    max_tokens: int | None
    """Cap on generated tokens."""
    seed: int | None
    """This sample's seed (``sample_seed``)."""
    stop: list[str] | None
    """Stop sequences."""
    response_format: dict[str, Any] | None
    """E.g. JSON mode."""
    top_logprobs: int = 0
    """Alternatives per generated token to return (0: no log-probabilities asked)."""
    local_options: dict[str, Any] = field(default_factory=dict)
    """The embedded model's own options, only those set (repeat penalty, stop flags)."""

    def litellm_kwargs(self) -> dict[str, Any]:
        """The keyword arguments for ``litellm.completion`` (unset values left out)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "api_base": self.api_base,
            "messages": self.messages,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "stop": self.stop,
            "response_format": self.response_format,
            **self.local_options,
        }
        if self.top_logprobs:
            kwargs.update(logprobs=True, top_logprobs=self.top_logprobs)
        return {k: v for k, v in kwargs.items() if v is not None}


def build_request(
    spec: ModelSpec,
    messages: Sequence[Message] | str,
    *,
    temperature: float | None,
    max_tokens: int | None,
    stop: Sequence[str] | None,
    seed: int | None,
    sample: int,
    response_format: dict[str, Any] | None,
    top_logprobs: int = 0,
) -> Request:
    """The request of one completion (``temperature`` already the role's choice)."""
    if isinstance(messages, str):
        messages = [Message("user", messages)]
    if spec.system_prompt:  # unset (every API model): requests as before
        messages = with_system_prompt(list(messages), spec.system_prompt)
    local: dict[str, Any] = {}
    if spec.repeat_penalty is not None:
        local["repeat_penalty"] = spec.repeat_penalty
    if spec.stop_on_repeated_sentence:
        local["stop_on_repeated_sentence"] = True
    if spec.stop_on_copied_sentence:
        local["stop_on_copied_sentence"] = True
    return Request(
        model=spec.model,
        api_base=spec.api_base,
        messages=[litellm_message(m, spec) for m in messages],
        temperature=temperature,
        top_p=spec.top_p,
        max_tokens=max_tokens or spec.max_tokens,
        seed=sample_seed(seed, sample),
        stop=list(stop) if stop else None,
        response_format=response_format,
        top_logprobs=int(top_logprobs),
        local_options=local,
    )


def cache_fields(
    request: Request, *, model_file: str | None, sample: int, repeat: int, judge_sample: int = 0
) -> dict[str, Any]:
    """The request as the response cache keys it and ``calls.jsonl`` records it.

    A fixed form: every field below is present (None included) except those added only
    when set, so that the keys of requests that do not use them stayed as they were when
    they were introduced (a repeat index, log-probabilities, the local model's options).
    """
    fields: dict[str, Any] = {
        "model": request.model,
        "model_file": model_file,
        "api_base": request.api_base,
        "messages": request.messages,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "stop": request.stop,
        "response_format": request.response_format,
        "sample": sample,
        **request.local_options,
    }
    if repeat:
        fields["repeat"] = repeat
    if judge_sample:
        fields["judge_sample"] = judge_sample
    if request.top_logprobs:
        fields.update(logprobs=True, top_logprobs=request.top_logprobs)
    return fields


def litellm_message(m: Message, spec: ModelSpec) -> dict[str, Any]:
    """Litellm's message form; a cache mark becomes Anthropic's cache_control block for Claude."""
    if m.cache and spec.is_claude:
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


def slot_seed(seed: int | None, slot: int) -> int | None:
    """The seed of the judge's ``slot``-th repeated sample.

    The run's for slot 0, a distinct one for each other (from 0 when the run has none), so a
    seeded provider answers each sample afresh.
    """
    if slot == 0:
        return seed
    digest = hashlib.sha256(f"{seed or 0}:judge-sample:{slot}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF
