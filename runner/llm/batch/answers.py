"""A batch answer as the response cache keeps it, and what it costs.

A batch's answers go into the response cache as soon as they are read, in the fields an online
answer stores (``runner.llm.completions.to_stored``) plus the online price it would have had,
so a rerun, another job of the sweep or the waiting caller finds it there and pays nothing.
"""

from __future__ import annotations

from typing import Any

from runner.llm.batch.protocol import BatchAnswer
from runner.llm.prices import BATCH_DISCOUNT, Price


def cache_entry(answer: BatchAnswer, price: Price) -> dict[str, Any]:
    """The cache entry of a batch answer (the same fields an online answer stores)."""
    return {
        "text": answer.text,
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "finish_reason": answer.finish_reason,
        "cached_prompt_tokens": answer.cached_prompt_tokens,
        "cost_usd": batch_cost(answer, price),
        "online_cost_usd": answer.online_cost_usd,
        **({"top_logprobs": list(answer.top_logprobs)} if answer.top_logprobs else {}),
    }


def batch_cost(answer: BatchAnswer, price: Price) -> float:
    """What a batch answer costs.

    Its online price at the batch discount (cache reads and writes priced as online), else its
    tokens at the batch price.
    """
    if answer.online_cost_usd is not None:
        return answer.online_cost_usd * BATCH_DISCOUNT
    return price.cost(answer.prompt_tokens, answer.completion_tokens)


def answer_of(entry: dict[str, Any]) -> BatchAnswer:
    """A cache entry of a batch answer read back (what ``cache_entry`` wrote)."""
    return BatchAnswer(
        text=str(entry["text"]),
        prompt_tokens=int(entry.get("prompt_tokens") or 0),
        completion_tokens=int(entry.get("completion_tokens") or 0),
        cached_prompt_tokens=int(entry.get("cached_prompt_tokens") or 0),
        finish_reason=str(entry.get("finish_reason") or "stop"),
        top_logprobs=tuple(entry.get("top_logprobs") or ()),
        online_cost_usd=entry.get("online_cost_usd"),
    )
