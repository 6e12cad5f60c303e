"""What a provider's batch adapter does, as plain data: submit, look, read results, cancel.

An adapter turns gateway ``Request``s (litellm's message form, as the cache keys them)
into its provider's batch lines and the provider's answers back into ``BatchAnswer``s. Each
request travels under its cache key as the provider's ``custom_id`` (64 hex characters,
within both providers' limits), so an answer is always matched to the request that asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from runner.llm.request import Request


@dataclass(frozen=True)
class BatchRequest:
    """One request of a batch."""

    custom_id: str
    """The request's cache key (``runner.llm.cache.cache_key``)."""
    request: Request
    """What the gateway would have sent online."""


@dataclass(frozen=True)
class BatchState:
    """A batch as the provider reports it now."""

    status: str
    """The provider's own word ('in_progress', 'ended', 'validating', 'completed', ...)."""
    ended: bool
    """True when no more answers will come (ended, completed, failed, expired, cancelled)."""
    done: int
    """Requests answered."""
    failed: int
    """Requests that errored, expired or were cancelled."""
    total: int
    """Requests in the batch."""


@dataclass(frozen=True)
class BatchAnswer:
    """One request's answer, as the gateway's ``Completion`` needs it."""

    text: str
    """The assistant message's text."""
    prompt_tokens: int
    """Prompt tokens billed (for Anthropic: input, cache reads and cache writes together, as
    litellm counts them online)."""
    completion_tokens: int
    """Generated tokens."""
    cached_prompt_tokens: int = 0
    """Prompt tokens served from the provider's prefix cache."""
    finish_reason: str = "stop"
    """'stop' or 'length', as litellm maps the provider's stop reason online."""
    top_logprobs: tuple[dict[str, float], ...] = ()
    """Per generated token, its alternatives' log-probabilities, when the request asked."""
    online_cost_usd: float | None = None
    """What the same answer costs online, as the gateway prices an online call
    (``runner/llm/completions.cost_usd``: cache reads and writes at their own prices); the
    collector charges it at the batch discount. None: priced from the tokens above."""


@dataclass(frozen=True)
class BatchFailure:
    """One request the batch did not answer."""

    error: str
    """One line: the provider's error type and message ('expired', 'invalid_request_error: ...')."""
    retry: bool
    """True when sending it again may succeed (expired, cancelled, a server error); False for
    a request the provider refused as invalid."""


class BatchProvider(Protocol):
    """A provider's batch API, bound to one endpoint and key."""

    name: str
    """'anthropic' or 'openai' (the ledger's ``provider``)."""
    max_requests: int
    """Requests one batch may hold (Anthropic 100,000; OpenAI 50,000)."""
    max_bytes: int
    """Bytes one batch may hold (Anthropic 256 MB; OpenAI's input file 200 MB)."""

    def accepts(self, request: Request) -> bool:
        """True when this API answers ``request`` in a batch as litellm would online.

        Else the gateway sends it online: e.g. Anthropic has no JSON mode nor log-probabilities.
        """
        ...

    def line_bytes(self, item: BatchRequest) -> int:
        """The size this request adds to a batch (its JSON line), for splitting."""
        ...

    def submit(self, items: list[BatchRequest]) -> str:
        """Create one batch of ``items``; return the provider's batch id."""
        ...

    def state(self, batch_id: str) -> BatchState:
        """The batch's status and counts now."""
        ...

    def results(self, batch_id: str) -> dict[str, BatchAnswer | BatchFailure]:
        """Every request's outcome by custom_id, once ``state(batch_id).ended``."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (answers already made stay readable)."""
        ...


def within_limits(provider: BatchProvider, items: list[BatchRequest]) -> list[list[BatchRequest]]:
    """``items`` in batches within the provider's request and byte limits, in order."""
    parts: list[list[BatchRequest]] = [[]]
    size = 0
    for item in items:
        line = provider.line_bytes(item)
        full = len(parts[-1]) >= provider.max_requests or size + line > provider.max_bytes
        if parts[-1] and full:
            parts.append([])
            size = 0
        parts[-1].append(item)
        size += line
    return [p for p in parts if p]
