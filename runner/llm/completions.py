"""A ``Completion`` from a provider's response or from a cache entry, and what a call cost.

litellm is loaded only to price a response it has not priced already.
"""

from __future__ import annotations

from typing import Any

from runner.api.types import Completion
from runner.llm.providers import load_litellm, new_call_id
from runner.llm.spec import ModelSpec


def from_response(response: Any, spec: ModelSpec, latency: float) -> Completion:
    """The completion of a litellm response that took ``latency`` seconds."""
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    choice = response.choices[0]
    return Completion(
        top_logprobs=_top_logprobs(choice),
        text=choice.message.content or "",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_usd(spec, response, prompt_tokens, completion_tokens),
        latency_s=latency,
        cached=False,
        call_id=new_call_id(),
        finish_reason=str(choice.finish_reason or "stop"),
        cached_prompt_tokens=int(getattr(details, "cached_tokens", 0) or 0),
    )


def cost_usd(spec: ModelSpec, response: Any, prompt_tokens: int, completion_tokens: int) -> float:
    """The call's price: the model's own per-token prices, else litellm's; 0 when unknown."""
    if spec.input_cost_per_token is not None or spec.output_cost_per_token is not None:
        return (spec.input_cost_per_token or 0.0) * prompt_tokens + (
            spec.output_cost_per_token or 0.0
        ) * completion_tokens
    if spec.in_process:
        return 0.0  # litellm.completion_cost raises for custom providers
    hidden = getattr(response, "_hidden_params", None) or {}
    if hidden.get("response_cost") is not None:  # litellm priced it already: don't redo it
        return float(hidden["response_cost"])
    try:
        return float(load_litellm().completion_cost(completion_response=response))
    except Exception:  # unmapped model: cost unknown, reported as 0 (see README)
        return 0.0


def _top_logprobs(choice: Any) -> tuple[dict[str, float], ...]:
    """Per generated token, its alternatives and their log-probabilities (when returned)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if content is None and isinstance(getattr(choice, "logprobs", None), dict):
        content = choice.logprobs.get("content")
    out = []
    for token in content or ():
        alternatives = _get(token, "top_logprobs") or []
        out.append({str(_get(a, "token")): float(_get(a, "logprob")) for a in alternatives})
    return tuple(out)


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def to_stored(c: Completion) -> dict[str, Any]:
    """The cache entry of a completion: what a rerun needs to answer the same."""
    return {
        "text": c.text,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "finish_reason": c.finish_reason,
        "cached_prompt_tokens": c.cached_prompt_tokens,
        "cost_usd": c.cost_usd,
        **({"top_logprobs": list(c.top_logprobs)} if c.top_logprobs else {}),
    }


def from_stored(stored: dict[str, Any], cost: float, latency: float, cached: bool) -> Completion:
    """The completion of a cache entry (a new call id: each use is its own call)."""
    return Completion(
        text=stored["text"],
        prompt_tokens=stored["prompt_tokens"],
        completion_tokens=stored["completion_tokens"],
        cost_usd=cost,
        latency_s=latency,
        cached=cached,
        call_id=new_call_id(),
        finish_reason=stored.get("finish_reason", "stop"),
        cached_prompt_tokens=stored.get("cached_prompt_tokens", 0),
        top_logprobs=tuple(stored.get("top_logprobs") or ()),
    )
