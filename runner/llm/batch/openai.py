"""OpenAI's Batch API (files + batches) through the ``openai`` SDK; OpenAI-compatible servers too.

One batch is one uploaded JSONL file whose lines are ``{"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body"}``. The body is what litellm posts online for the same
``Request`` (``chat_body``), so a batch answer is the answer the online call would have got
and the cache may keep it under the request's key. Answers come back in two files: the output
file (status 200) and the error file (other statuses, expired and cancelled lines); a request
in neither is reported as not answered, for the collector to send again.

``max_retries=0``: the collector retries (and the ledger makes a retry safe), as the gateway
does for online calls. SDK exceptions become ``runner.api.errors`` classes with one line naming
what failed and what to do; the API key never appears in them.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

import openai

from runner.api.errors import (
    AuthError,
    LLMError,
)
from runner.llm.batch.bodies import Bodies
from runner.llm.batch.http_errors import Failed, one_line, status_error
from runner.llm.batch.protocol import BatchAnswer, BatchFailure, BatchRequest, BatchState
from runner.llm.completions import from_response
from runner.llm.provider_errors import _retry_after, translate
from runner.llm.providers import load_litellm
from runner.llm.request import Request
from runner.llm.spec import ModelSpec

ENDPOINT: Final = "/v1/chat/completions"
"""The one endpoint the runner batches."""

ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
"""Statuses after which a batch brings no more answers."""

RETRY_STATUSES = frozenset({408, 409, 429})
"""Client-side statuses a later attempt may pass (a timeout, a conflict, a rate limit); other
4xx are the request's own fault and fail the same way again."""

INVALID_INPUT = frozenset(
    {"invalid_json_line", "duplicate_custom_id", "url_mismatch", "model_mismatch", "empty_file"}
)
"""Codes of a batch refused for its input file: sending the same lines again fails again."""

T = TypeVar("T")


class OpenAIBatches:
    """OpenAI's Batch API bound to one model, server and key (``BatchProvider``)."""

    name = "openai"
    max_requests = 50_000
    max_bytes = 200_000_000
    """OpenAI's input file limit (200 MB, counted in decimal megabytes to stay under it)."""

    def __init__(self, spec: ModelSpec, api_key: str | None, *, role: str = "") -> None:
        """The batch API serving ``spec`` (``spec.api_base``'s, else OpenAI's) with ``api_key``.

        ``role`` only words the messages ('judge=gpt4: ...').
        """
        self.spec = spec
        self.who = f"{role}={spec.name}" if role else spec.name
        self._role = role or "model"
        self._key = api_key
        self._bodies = Bodies()
        try:
            self._client = openai.OpenAI(
                api_key=api_key,
                base_url=spec.api_base or None,
                max_retries=0,
                timeout=spec.timeout_s,
            )
        except openai.OpenAIError as err:  # no key given and none in OPENAI_API_KEY
            env = spec.api_key_env or "OPENAI_API_KEY"
            raise AuthError(
                f"{self.who}: no API key for OpenAI's batch API; set {env} in the environment"
            ) from err

    # --- what a batch holds ------------------------------------------------------------------

    def accepts(self, request: Request) -> bool:
        """True for chat requests: JSON mode and log-probabilities travel in the body.

        A request asking for log-probabilities only while ``BatchAnswer`` cannot carry them
        back (no ``top_logprobs`` field): else they would be lost on the way to the cache.
        """
        if request.local_options or not request.messages:
            return False
        return not request.top_logprobs or "top_logprobs" in BatchAnswer.__dataclass_fields__

    def body(self, request: Request) -> dict[str, Any]:
        """The chat-completions body litellm posts online for ``request``."""
        return self._bodies.body(request)

    def line(self, item: BatchRequest) -> bytes:
        """The request's line of the input file."""
        line = {
            "custom_id": item.custom_id,
            "method": "POST",
            "url": ENDPOINT,
            "body": self.body(item.request),
        }
        return (json.dumps(line, ensure_ascii=False) + "\n").encode()

    def line_bytes(self, item: BatchRequest) -> int:
        """The size the request's line adds to the input file."""
        return len(self.line(item))

    # --- the batch's life --------------------------------------------------------------------

    def submit(self, items: list[BatchRequest]) -> str:
        """Upload the input file and create its batch; the batch's id."""
        data = b"".join(self.line(item) for item in items)
        upload = self._call(
            "uploading the batch file",
            lambda: self._client.files.create(
                file=("batch.jsonl", data, "application/jsonl"), purpose="batch"
            ),
        )
        try:
            batch = self._call(
                "creating the batch",
                lambda: self._client.batches.create(
                    input_file_id=upload.id,
                    endpoint=ENDPOINT,
                    completion_window="24h",
                    metadata={"source": "summarization-runner", "model": self.spec.name[:500]},
                ),
            )
        except LLMError:
            self._forget(upload.id)
            raise
        return batch.id

    def state(self, batch_id: str) -> BatchState:
        """The batch's status and counts now (expired and cancelled requests count as failed)."""
        batch = self._retrieve(batch_id)
        counts = batch.request_counts
        total = counts.total if counts else 0
        done = counts.completed if counts else 0
        failed = counts.failed if counts else 0
        ended = batch.status in ENDED
        if ended and batch.status != "completed":  # OpenAI counts expired lines in neither
            failed = max(failed, total - done)
        return BatchState(batch.status, ended, done, failed, total)

    def results(self, batch_id: str) -> dict[str, BatchAnswer | BatchFailure]:
        """Every request's outcome: its answer, its error, or 'no result' when in no file."""
        batch = self._retrieve(batch_id)
        out: dict[str, BatchAnswer | BatchFailure] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                for line in _jsonl(self._content(file_id)):
                    out[str(line["custom_id"])] = outcome(line, self.spec)
        total = batch.request_counts.total if batch.request_counts else 0
        if batch.status == "completed" and len(out) >= total:
            return out
        missing = _batch_failure(batch) or BatchFailure("no result", retry=True)
        for line in _jsonl(self._content(batch.input_file_id)):
            out.setdefault(str(line["custom_id"]), missing)
        return out

    def cancel(self, batch_id: str) -> None:
        """Ask OpenAI to stop the batch; one already ended is left as it is."""
        try:
            self._call("cancelling the batch", lambda: self._client.batches.cancel(batch_id))
        except LLMError:
            if self._retrieve(batch_id).status in ENDED | {"cancelling"}:
                return
            raise

    # --- HTTP --------------------------------------------------------------------------------

    def _retrieve(self, batch_id: str) -> openai.types.Batch:
        return self._call(
            f"looking at batch {batch_id}", lambda: self._client.batches.retrieve(batch_id)
        )

    def _content(self, file_id: str) -> str:
        response = self._call(
            f"downloading file {file_id}", lambda: self._client.files.content(file_id)
        )
        return response.text

    def _forget(self, file_id: str) -> None:
        """Delete an uploaded file no batch will read (best effort: it only takes space)."""
        with contextlib.suppress(openai.OpenAIError):
            self._client.files.delete(file_id)

    def _call(self, doing: str, call: Callable[[], T]) -> T:
        """``call()``, its SDK exception raised as the ``runner.api.errors`` class it means."""
        try:
            return call()
        except openai.OpenAIError as err:
            raise self._translate(err, doing) from err

    def _translate(self, err: Exception, doing: str) -> LLMError:
        """One line: what failed while ``doing``, and what to do about it."""
        status = getattr(err, "status_code", None)
        where = f" at {self.spec.api_base}" if self.spec.api_base else ""
        why = self._scrub(" ".join(str(err).split()))[:300]
        if not isinstance(status, int):  # never reached the server, or no answer in time
            return translate(err, self._role, self.spec.name, self.spec.api_base, self.spec.model)
        if status == 404 and doing in ("uploading the batch file", "creating the batch"):
            return LLMError(
                f"{self.who}: the server{where} does not serve OpenAI's batch endpoints "
                f"(/v1/files, /v1/batches: HTTP 404 while {doing}); drop {self._role}.batch "
                f"or use a server that has them (vLLM's OpenAI server does)"
            )
        if status == 404:
            return LLMError(
                f"{self.who}: {doing}: the server{where} does not know it (HTTP 404: {why}); "
                f"it was made with another key or server, or deleted; python -m runner.batches "
                f"lists the ledger's batches"
            )
        return status_error(
            Failed(self.who, self._role, doing, where, why),
            status,
            api="the batch API",
            key_env=self.spec.api_key_env or "OPENAI_API_KEY",
            queue_limits="OpenAI limits the tokens queued in batches per model and the rate of "
            "file and batch requests",
            retry_after=_retry_after(err),
        )

    def _scrub(self, text: str) -> str:
        """``text`` without the key, nor what looks like an OpenAI key (even masked)."""
        if self._key and len(self._key) >= 4:
            text = text.replace(self._key, "***")
        return re.sub(r"\bsk-[A-Za-z0-9*_\-]{3,}", "sk-***", text)


def outcome(line: dict[str, Any], spec: ModelSpec) -> BatchAnswer | BatchFailure:
    """One result line as an answer, or a failure (retry: may a new batch answer it?)."""
    error = line.get("error")
    response = line.get("response") or {}
    if error:  # expired, cancelled: the batch's doing, not the request's
        code = error.get("code") or "error"
        return BatchFailure(f"{code}: {one_line(error.get('message'))}", retry=True)
    status = int(response.get("status_code") or 0)
    body = response.get("body") or {}
    if status != 200:
        detail = body.get("error") if isinstance(body, dict) else None
        kind = (detail or {}).get("type") or "error"
        message = one_line((detail or {}).get("message") or body)
        retry = status >= 500 or status in RETRY_STATUSES or status == 0
        return BatchFailure(f"HTTP {status} {kind}: {message}", retry=retry)
    return answer(body, spec)


def answer(body: dict[str, Any], spec: ModelSpec) -> BatchAnswer:
    """A chat completion read as the gateway reads litellm's online response of the same body.

    litellm's ``ModelResponse`` of the body goes through ``completions.from_response``, so
    text, tokens, cache reads and finish reason are read by the online path's own code.
    """
    response = load_litellm().ModelResponse(**body)
    completion = from_response(response, spec, 0.0)
    extra: dict[str, Any] = {}
    if completion.top_logprobs and "top_logprobs" in BatchAnswer.__dataclass_fields__:
        extra["top_logprobs"] = completion.top_logprobs
    return BatchAnswer(
        text=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        cached_prompt_tokens=completion.cached_prompt_tokens,
        finish_reason=completion.finish_reason,
        online_cost_usd=_online_cost(spec, response, completion.cost_usd),
        **extra,
    )


def _online_cost(spec: ModelSpec, response: Any, priced: float) -> float | None:
    """The answer's online price as the gateway computes it, None when litellm cannot price it.

    The gateway says 0 for an unpriced model; None lets the collector use its batch price.
    """
    if spec.input_cost_per_token is not None or spec.output_cost_per_token is not None:
        return priced
    if priced:
        return priced
    try:
        return float(load_litellm().completion_cost(completion_response=response))
    except Exception:  # unmapped model
        return None


def _batch_failure(batch: Any) -> BatchFailure | None:
    """The failure of every request of a batch OpenAI refused as a whole, else None."""
    if batch.status != "failed":
        return None
    errors = list(getattr(batch.errors, "data", None) or [])
    first = errors[0] if errors else None
    code = getattr(first, "code", None) or "failed"
    message = one_line(getattr(first, "message", None) or "the batch failed")
    line = getattr(first, "line", None)
    at = f" (line {line})" if line else ""
    return BatchFailure(f"batch failed: {code}{at}: {message}", retry=code not in INVALID_INPUT)


def _jsonl(text: str) -> Iterable[dict[str, Any]]:
    for raw in text.splitlines():
        if raw.strip():
            yield json.loads(raw)
