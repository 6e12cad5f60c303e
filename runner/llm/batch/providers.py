"""Which batch API serves a model, and its adapter; the SDKs are imported only here.

Anthropic's Message Batches for Claude models ('anthropic/...', a bare 'claude-...'), through
the ``anthropic`` SDK (litellm retrieves such batches but cannot create them); OpenAI's files
+ batches for 'openai/...' models and bare GPT names, through the ``openai`` SDK, also for an
OpenAI-compatible server (``api_base``) that implements ``/v1/files`` and ``/v1/batches``
(vLLM does). Other providers are refused with one line before any work.
"""

from __future__ import annotations

import logging

from runner.api.errors import ConfigError
from runner.llm.batch.protocol import BatchProvider
from runner.llm.spec import ModelSpec

OPENAI_BARE = ("gpt-", "o1", "o3", "o4", "chatgpt-")
"""Bare model names litellm sends to OpenAI."""


def batch_api(spec: ModelSpec) -> str | None:
    """'anthropic' or 'openai': the batch API that serves ``spec``; None when none does."""
    if spec.in_process:
        return None
    if spec.provider == "anthropic":
        return "anthropic"
    if spec.provider == "openai" or (not spec.provider and spec.model.startswith(OPENAI_BARE)):
        return "openai"
    return None


def unsupported(spec: ModelSpec, role: str) -> str | None:
    """Why ``role``'s model cannot batch, as the one line a config check prints; else None."""
    if batch_api(spec) is not None:
        return None
    if spec.in_process:
        return (
            f"{role}.batch=true: {role}={spec.name} answers in this process and has no batch "
            f"API; use an Anthropic or OpenAI model (or an OpenAI-compatible server with "
            f"/v1/batches), or drop {role}.batch"
        )
    return (
        f"{role}.batch=true: {role}={spec.name} ({spec.model}) is served by "
        f"{spec.provider or 'a provider'} whose batch API the runner does not speak (Anthropic "
        f"and OpenAI, and OpenAI-compatible servers with /v1/batches, are supported); drop "
        f"{role}.batch"
    )


QUIET_LOGGERS = ("httpx", "httpx2", "httpcore", "anthropic", "openai")
"""The SDKs' HTTP loggers: at INFO (Hydra's default level) each poll of a batch would be a line."""


def provider_for(spec: ModelSpec, role: str, api_key: str | None) -> BatchProvider:
    """The adapter of ``spec``'s batch API, bound to its server and key."""
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    api = batch_api(spec)
    if api == "anthropic":
        from runner.llm.batch.anthropic import AnthropicBatches

        return AnthropicBatches(spec, api_key, role=role)
    if api == "openai":
        from runner.llm.batch.openai import OpenAIBatches

        return OpenAIBatches(spec, api_key, role=role)
    raise ConfigError(unsupported(spec, role) or f"{role}: no batch API")
