"""The gateway's embedding half: ``Gateway.embed`` for the ``embedder`` role.

Same door as completions: a persistent cache (one entry per text, keyed by model, server
and text, so a summary embedded once is never paid again), the endpoint's concurrency
limit, bounded retries, cancellation and one ``calls.jsonl`` line per batch (the texts,
never the vectors). API models go through ``litellm.embedding``; the embedded MiniLM
(``local-embed/...``) runs in-process without litellm.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from runner.api.errors import Cancelled, RateLimitedError
from runner.api.types import Completion
from runner.llm.cache import cache_key
from runner.llm.provider_errors import translate
from runner.llm.providers import load_litellm, new_call_id

Gateway = Any
"""``runner.llm.gateway.Gateway`` (not imported: it imports this module)."""

BATCH = 64
"""Texts per request: well under every provider's limit (OpenAI: 2,048)."""


def embed(gateway: Gateway, texts: Sequence[str], purpose: str) -> list[list[float]]:
    """One vector per text, in order; cached texts are not sent again."""
    key_of = {text: cache_key(_request(gateway, text)) for text in texts}
    vectors: dict[str, list[float]] = {}
    for key in key_of.values():
        stored = gateway.cache.get(key) if gateway.cache else None
        if stored is not None:
            vectors[key] = list(stored["embedding"])
    cached = [text for text in key_of if key_of[text] in vectors]
    missing = [text for text in key_of if key_of[text] not in vectors]
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        for text, vector in zip(batch, _call(gateway, batch, purpose), strict=True):
            vectors[key_of[text]] = vector
            if gateway.cache:
                gateway.cache.put(key_of[text], {"embedding": vector})
    if cached:
        _record(gateway, cached, 0, 0.0, 0.0, purpose, cached=True)
    return [vectors[key_of[text]] for text in texts]


def _request(gateway: Gateway, text: str) -> dict[str, Any]:
    spec = gateway.spec
    return {"kind": "embedding", "model": spec.model, "api_base": spec.api_base, "input": text}


def _call(gateway: Gateway, batch: list[str], purpose: str) -> list[list[float]]:
    if gateway.cancel.is_set():
        raise Cancelled(f"{gateway.role}={gateway.name}: the job was stopped before this call")
    if gateway.call_log.budget is not None:
        gateway.call_log.budget.check()
    start = time.perf_counter()
    with gateway.in_flight:
        if gateway.spec.is_local_embedder:
            from runner.llm.local import embedder as local_embedder

            vectors, tokens, cost = local_embedder.embed(gateway.spec.model, batch), 0, 0.0
        else:
            (vectors, tokens, cost), _ = gateway.spec.retry.run(lambda: _remote(gateway, batch))
    _record(gateway, batch, tokens, cost, time.perf_counter() - start, purpose, cached=False)
    return vectors


def _remote(gateway: Gateway, batch: list[str]) -> tuple[list[list[float]], int, float]:
    spec = gateway.spec
    kwargs: dict[str, Any] = {"model": spec.model, "input": batch, "timeout": spec.timeout_s}
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    kwargs["api_key"] = gateway.api_key()
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    rate = gateway.rate  # embedder.rpm/tpm: shared with the sweep's jobs as the completions'
    estimate = rate.estimate([{"content": text} for text in batch]) if rate else 0
    if rate is not None:
        rate.acquire(estimate, gateway.cancel)
    try:
        response = load_litellm().embedding(**kwargs)
    except Exception as err:
        error = translate(err, gateway.role, spec.name, spec.api_base, spec.model)
        if rate is not None and isinstance(error, RateLimitedError):
            rate.rejected(error.retry_after)
        gateway.refused(error)
        raise error from err
    rows = sorted(response.data, key=lambda row: _field(row, "index"))
    vectors = [list(map(float, _field(row, "embedding"))) for row in rows]
    tokens = int(getattr(getattr(response, "usage", None), "prompt_tokens", 0) or 0)
    if rate is not None:
        rate.settle(estimate, tokens, 0)
    cost = (
        spec.input_cost_per_token * tokens
        if spec.input_cost_per_token is not None
        else _priced(response)
    )
    return vectors, tokens, cost


def _field(row: Any, name: str) -> Any:
    return row[name] if isinstance(row, dict) else getattr(row, name)


def _priced(response: Any) -> float:
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost")
    return float(cost) if cost is not None else 0.0


def _record(
    gateway: Gateway,
    batch: list[str],
    tokens: int,
    cost: float,
    latency: float,
    purpose: str,
    cached: bool,
) -> None:
    completion = Completion(
        text=f"<{len(batch)} embeddings>",
        prompt_tokens=tokens,
        completion_tokens=0,
        cost_usd=cost,
        latency_s=latency,
        cached=cached,
        call_id=new_call_id(),
    )
    request = {
        "kind": "embedding",
        "model": gateway.spec.model,
        "api_base": gateway.spec.api_base,
        "input": batch,
    }
    gateway.call_log.record(gateway.role, gateway.name, request, completion, purpose)
