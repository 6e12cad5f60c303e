"""Anthropic's Message Batches through the ``anthropic`` SDK; litellm cannot create them.

A batch request's ``params`` are the body litellm posts to ``/v1/messages`` online for the
same ``Request``, taken from litellm itself (``return_raw_request``: the request built up to
the point of sending it, with ``drop_params=True`` as the gateway calls it; once per request
shape, ``openai.Bodies``), so the system prompt, cache_control blocks, stop sequences,
default ``max_tokens`` and dropped parameters cannot drift from the online path. An answer is
read back by litellm's own Anthropic response transform and the gateway's
``completions.from_response``: text, tokens (cache reads and writes counted in the prompt, as
litellm does online), cache reads, finish reason and online price are what the online call
would have recorded.

The SDK talks to the server litellm would (``api_base`` normalized as litellm normalizes it),
with ``max_retries=0``: the collector retries, and the ledger makes a retry safe. SDK
exceptions become ``runner.api.errors`` classes, one line naming what failed and what to do; the
API key never appears in them.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anthropic

from runner.api.errors import (
    AuthError,
    InvalidAnswerError,
    LLMError,
)
from runner.llm.batch.bodies import Bodies
from runner.llm.batch.http_errors import Failed, one_line, status_error
from runner.llm.batch.protocol import BatchAnswer, BatchFailure, BatchRequest, BatchState
from runner.llm.completions import from_response
from runner.llm.provider_errors import _retry_after, check_answer, translate
from runner.llm.providers import load_litellm
from runner.llm.request import Request
from runner.llm.spec import ModelSpec

ROUTE: Final = "v1/messages"
"""The Messages endpoint, which litellm appends to ``api_base`` and the SDK to its base URL."""

RETRYABLE: Final = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})
"""Error types of an errored request that a new batch may answer (the server's fault); the
others (invalid_request_error, not_found_error, permission_error, ...) fail the same again."""

MAX_BODIES: Final = 200_000
"""Bodies kept between ``line_bytes`` and ``submit`` (beyond it the cache starts again)."""

KEY_SHAPE: Final = re.compile(r"\bsk-ant-[A-Za-z0-9*_\-]{3,}")
"""An Anthropic key, even masked, as a server's message might quote it."""

T = TypeVar("T")


class AnthropicBatches:
    """Anthropic's Message Batches bound to one model, server and key (``BatchProvider``)."""

    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256_000_000
    """Anthropic's limit on a batch (256 MB, counted in decimal megabytes to stay under it)."""

    def __init__(self, spec: ModelSpec, api_key: str | None, *, role: str = "") -> None:
        """The batch API serving ``spec`` (``spec.api_base``'s, else Anthropic's) with ``api_key``.

        No key: ``ANTHROPIC_API_KEY``'s, as litellm reads it, or none for a server of one's own
        (``api_base``), as the gateway sends it. ``role`` only words the messages.
        """
        self.spec = spec
        self.who = f"{role}={spec.name}" if role else spec.name
        self._role = role or "model"
        self._env = spec.api_key_env or "ANTHROPIC_API_KEY"
        key = (
            api_key or os.environ.get("ANTHROPIC_API_KEY") or ("no-key" if spec.api_base else None)
        )
        if not key:
            raise AuthError(
                f"{self.who}: no API key for Anthropic's Message Batches API; set {self._env} "
                "in the environment"
            )
        self._key = key
        self._bodies: dict[str, dict[str, Any]] = {}
        self._shapes = Bodies()
        self._lock = threading.Lock()
        self._client = anthropic.Anthropic(
            api_key=key,
            base_url=sdk_base_url(spec.api_base),
            max_retries=0,
            timeout=spec.timeout_s,
        )

    # --- what a batch holds ------------------------------------------------------------------

    def accepts(self, request: Request) -> bool:
        """False for JSON mode and log-probabilities, which a batch would not answer as online.

        litellm emulates JSON mode for Anthropic with a forced tool call and has no
        log-probabilities from it; an in-process model's options have no place in a batch.
        """
        return not (request.response_format or request.top_logprobs or request.local_options)

    def body(self, item: BatchRequest) -> dict[str, Any]:
        """The Messages body litellm posts online for ``item``'s request (kept until submitted)."""
        with self._lock:
            known = self._bodies.get(item.custom_id)
        if known is not None:
            return known
        made = self._shapes.body(item.request)
        with self._lock:
            if len(self._bodies) >= MAX_BODIES:
                self._bodies.clear()
            self._bodies[item.custom_id] = made
        return made

    def line(self, item: BatchRequest) -> dict[str, Any]:
        """The request as the batch create call carries it."""
        return {"custom_id": item.custom_id, "params": self.body(item)}

    def line_bytes(self, item: BatchRequest) -> int:
        """The bytes the request adds to the create call's JSON body (its comma included)."""
        return len(json.dumps(self.line(item)).encode()) + 1

    # --- the batch's life --------------------------------------------------------------------

    def submit(self, items: list[BatchRequest]) -> str:
        """Create one batch of ``items``; its id ('msgbatch_...')."""
        requests = [self.line(item) for item in items]
        batch = self._call(
            "creating the batch",
            lambda: self._client.messages.batches.create(requests=requests),  # type: ignore[arg-type]
        )
        with self._lock:
            for item in items:
                self._bodies.pop(item.custom_id, None)
        return str(batch.id)

    def state(self, batch_id: str) -> BatchState:
        """The batch's processing status and request counts now."""
        batch = self._call(
            f"looking at batch {batch_id}",
            lambda: self._client.messages.batches.retrieve(batch_id),
        )
        counts = batch.request_counts
        failed = counts.errored + counts.canceled + counts.expired
        return BatchState(
            status=str(batch.processing_status),
            ended=batch.processing_status == "ended",
            done=counts.succeeded,
            failed=failed,
            total=counts.processing + counts.succeeded + failed,
        )

    def results(self, batch_id: str) -> dict[str, BatchAnswer | BatchFailure]:
        """Every request's outcome by custom_id, read from the batch's results file (JSONL)."""
        lines = self._call(
            f"reading the results of batch {batch_id}", lambda: self._lines(batch_id)
        )
        out: dict[str, BatchAnswer | BatchFailure] = {}
        for line in lines:
            out[str(line["custom_id"])] = outcome(line.get("result") or {}, self.spec, self._role)
        return out

    def cancel(self, batch_id: str) -> None:
        """Ask Anthropic to stop the batch (answers already made stay readable)."""
        self._call(
            f"cancelling batch {batch_id}",
            lambda: self._client.messages.batches.cancel(batch_id),
        )

    # --- the SDK -----------------------------------------------------------------------------

    def _lines(self, batch_id: str) -> list[dict[str, Any]]:
        """The results file's lines as sent (the SDK's typed objects would add absent fields)."""
        decoder = self._client.messages.batches.results(batch_id)
        try:
            return [json.loads(raw) for raw in decoder.http_response.iter_lines() if raw.strip()]
        finally:
            decoder.close()

    def _call(self, doing: str, call: Callable[[], T]) -> T:
        """``call()``, what it raised turned into the ``runner.api.errors`` class it means."""
        try:
            return call()
        except Exception as err:  # SDK, HTTP and transport errors: translated once, here
            raise self._translate(err, doing) from err

    def _translate(self, err: Exception, doing: str) -> LLMError:
        """One line: what failed while ``doing``, and what to do about it."""
        status = getattr(err, "status_code", None)
        where = f" at {self.spec.api_base}" if self.spec.api_base else ""
        why = self._scrub(" ".join(str(err).split())[:300])
        if not isinstance(status, int):  # never reached the server, or no answer in time
            if isinstance(err, anthropic.AnthropicError) and not isinstance(
                err, anthropic.APIConnectionError
            ):
                return LLMError(f"{self.who}: {doing} failed{where} ({why})")
            error = translate(err, self._role, self.spec.name, self.spec.api_base, self.spec.model)
            error.args = (self._scrub(str(error)),)
            return error
        if status == 404 and doing == "creating the batch":
            return LLMError(
                f"{self.who}: the server{where} does not serve Anthropic's Message Batches "
                f"(/v1/messages/batches: HTTP 404); drop {self._role}.batch or fix "
                f"{self._role}.api_base"
            )
        if status == 413:
            return LLMError(
                f"{self.who}: the batch is too large for Anthropic{where} (HTTP 413: {why}); "
                f"Anthropic takes {self.max_requests:,} requests or 256 MB a batch"
            )
        return status_error(
            Failed(self.who, self._role, doing, where, why),
            status,
            api="Anthropic's Message Batches API",
            key_env=self._env,
            queue_limits="Anthropic limits the requests queued in batches",
            retry_after=_retry_after(err),
        )

    def _scrub(self, text: str) -> str:
        """``text`` without the key (nor anything shaped like an Anthropic key)."""
        if len(self._key) >= 4:
            text = text.replace(self._key, "***")
        return KEY_SHAPE.sub("sk-ant-***", text)


def sdk_base_url(api_base: str | None) -> str | None:
    """The SDK's base URL for the server litellm posts ``/v1/messages`` to, given ``api_base``.

    litellm takes ``api_base``, else ``ANTHROPIC_API_BASE`` or ``ANTHROPIC_BASE_URL``, drops
    trailing slashes and appends ``/v1/messages`` unless the path ends with it; the SDK
    appends ``/v1/messages/batches`` to its base. None: Anthropic's own host (the SDK's
    default). The tests post both ways to one server for each form of ``api_base``.
    """
    base = api_base or os.environ.get("ANTHROPIC_API_BASE") or os.environ.get("ANTHROPIC_BASE_URL")
    if not base:
        return None
    return base.rstrip("/").removesuffix("/" + ROUTE)


def outcome(result: dict[str, Any], spec: ModelSpec, role: str) -> BatchAnswer | BatchFailure:
    """One result as an answer, or a failure (retry: may a new batch answer it?)."""
    kind = str(result.get("type") or "missing")
    if kind == "succeeded":
        return answer(result.get("message") or {}, spec, role)
    if kind == "errored":
        detail = (result.get("error") or {}).get("error") or {}
        error_type = str(detail.get("type") or "error")
        message = one_line(detail.get("message") or "no message")
        return BatchFailure(f"{error_type}: {message}", retry=error_type in RETRYABLE)
    return BatchFailure(kind, retry=True)  # expired, canceled: the batch's doing


def answer(message: dict[str, Any], spec: ModelSpec, role: str) -> BatchAnswer | BatchFailure:
    """A Messages answer read as the gateway reads litellm's online response to it.

    litellm's Anthropic response transform makes its ``ModelResponse`` (prompt tokens with cache
    reads and writes, 'end_turn' -> 'stop', 'max_tokens' -> 'length'), which
    ``completions.from_response`` reads and prices as the gateway prices an online call (cache
    reads and writes at their own prices). An empty answer that says it ended is what the gateway
    retries online (``check_answer``): a failure to send again, never an answer to cache.
    """
    response = model_response(message)
    try:
        check_answer(response, False, role, spec.name)
    except InvalidAnswerError as err:
        return BatchFailure(str(err), retry=True)
    completion = from_response(response, spec, 0.0)
    configured = spec.input_cost_per_token is not None or spec.output_cost_per_token is not None
    return BatchAnswer(
        text=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        cached_prompt_tokens=completion.cached_prompt_tokens,
        finish_reason=completion.finish_reason,
        # 0 from an unmapped model: None lets the collector price the tokens itself
        online_cost_usd=completion.cost_usd if configured or completion.cost_usd else None,
    )


def model_response(message: dict[str, Any]) -> Any:
    """The ``ModelResponse`` litellm makes of an Anthropic message, by its Anthropic transform."""
    litellm = load_litellm()
    import httpx

    config = litellm.AnthropicConfig()
    raw = httpx.Response(200, json=message)
    return config.transform_parsed_response(
        completion_response=dict(message),
        raw_response=raw,
        model_response=litellm.ModelResponse(),
        json_mode=False,
        prefix_prompt=None,
    )
