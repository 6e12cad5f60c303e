"""An Anthropic API server on 127.0.0.1 for tests and benchmarks: Messages and Message Batches.

Speaks enough of Anthropic's HTTP API for litellm's ``anthropic/`` provider online
(``POST /v1/messages``) and for the ``anthropic`` SDK's Message Batches (create, retrieve,
results as JSONL, cancel, list), so the batch path and the online path of the same request
can be compared through the real clients, without the internet.

Answers come from a ``responder(params) -> str | AnthropicReply`` that sees the request's
Messages parameters (the body litellm posts online, or a batch request's ``params``): the
same request gets the same answer and the same usage either way, so an online run and a
batch run differ only in price. Usage: ``input_tokens`` counts the request's text (system
and messages, joined by newlines; ``runner.api.text.count_tokens``); the part up to the last
``cache_control`` block is reported as a cache read (``prompt_cache="read"``, the default)
or a cache write (``"write"``) instead, as Anthropic reports a prompt-cache hit or miss.
An answer is cut at the first stop sequence (``stop_reason="stop_sequence"``) or at
``max_tokens`` (``"max_tokens"``), as the API does.

A batch is ``in_progress`` for ``steps`` retrieves, then ``ended`` with its results; its
requests fail as ``fail`` scripts them. Every request, batch, retrieve and cancel is recorded
for the test to check. Parameters the API does not know are refused as the API refuses them
(400 ``invalid_request_error`` online, an errored result in a batch), so a client that sends
what Anthropic would reject fails here too.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from runner.api.text import count_tokens, decode, encode

OUTCOMES = ("errored", "invalid_request", "overloaded", "expired", "canceled")
"""What ``fail`` may script for a batch request: 'errored' is an ``api_error``,
'invalid_request' an ``invalid_request_error``, 'overloaded' an ``overloaded_error``."""

PARAMS = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "stop_sequences",
    "temperature",
    "top_p",
    "top_k",
    "metadata",
    "stream",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
    "container",
    "mcp_servers",
}
"""The Messages API's request parameters; any other is 'Extra inputs are not permitted'."""

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What Anthropic accepts as a batch request's ``custom_id``."""


@dataclass
class AnthropicReply:
    """A scripted answer: text, or (online) an HTTP error, or (in a batch) an errored result."""

    text: str = ""
    """The assistant message."""
    stop_reason: str = "end_turn"
    """'end_turn' unless the server cuts the text at a stop sequence or max_tokens."""
    status: int = 200
    """Non-200: online, that status with Anthropic's error body; in a batch, an errored
    result (400: invalid_request_error, 529: overloaded_error, else api_error)."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers online (e.g. retry-after)."""


Responder = Callable[[dict[str, Any]], "str | AnthropicReply"]
Outcome = Literal["errored", "invalid_request", "overloaded", "expired", "canceled"]
FailFn = Callable[[str, dict[str, Any], int], "Outcome | None"]
"""(custom_id, params, attempt) -> an outcome or None; ``attempt`` counts the earlier batches
that held this custom_id (0 in its first)."""
Predicate = Callable[[str, dict[str, Any]], bool]
"""(custom_id, params) -> True when the request gets the outcome it maps to."""
StatusOverride = Callable[[str, str], "int | None"]
"""(method, path) -> an HTTP status to answer instead, or None to answer normally."""


def text_of(content: Any) -> list[str]:
    """The texts of a message's or system prompt's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or () if isinstance(b, dict)]


def echo_responder(params: dict[str, Any]) -> str:
    """A deterministic answer: the first 40 words of the last message's text."""
    words = " ".join(text_of(params["messages"][-1].get("content"))).split()[:40]
    return " ".join(words).rstrip(".") + "."


def request_usage(params: dict[str, Any], prompt_cache: str) -> dict[str, int]:
    """Input tokens of ``params``: the cache-marked prefix as cache reads or writes, the rest as
    input (``output_tokens`` is added by the caller)."""
    parts: list[tuple[str, bool]] = []
    system = params.get("system")
    blocks: list[Any] = []
    if system is not None:
        blocks.append(system)
    blocks.extend(m.get("content") for m in params.get("messages", ()))
    for content in blocks:
        if isinstance(content, str):
            parts.append((content, False))
        else:
            for b in content or ():
                if isinstance(b, dict):
                    parts.append((str(b.get("text", "")), bool(b.get("cache_control"))))
    total = count_tokens("\n".join(text for text, _ in parts))
    marked = [i for i, (_, mark) in enumerate(parts) if mark]
    cached = count_tokens("\n".join(t for t, _ in parts[: marked[-1] + 1])) if marked else 0
    cached = min(cached, total)
    return {
        "input_tokens": total - cached,
        "cache_creation_input_tokens": cached if prompt_cache == "write" else 0,
        "cache_read_input_tokens": cached if prompt_cache == "read" else 0,
    }


def invalid_params(params: Any) -> str | None:
    """Why the Messages API would refuse ``params``, in its words; None when it would not."""
    if not isinstance(params, dict):
        return "params: Input should be a valid dictionary"
    for key in ("model", "messages", "max_tokens"):
        if key not in params:
            return f"{key}: Field required"
    extra = sorted(set(params) - PARAMS)
    if extra:
        return f"{extra[0]}: Extra inputs are not permitted"
    if not isinstance(params["max_tokens"], int) or params["max_tokens"] < 1:
        return "max_tokens: Input should be a positive integer"
    if not params["messages"]:
        return "messages: at least one message is required"
    for message in params["messages"]:
        if message.get("role") not in ("user", "assistant"):
            return (
                f"messages: Unexpected role {message.get('role')!r}. The Messages API accepts a "
                'top-level `system` parameter, not "system" as an input message role.'
            )
    return None


def now_iso(at: float | None = None) -> str:
    """RFC 3339 in UTC with a 'Z', as Anthropic writes its timestamps."""
    moment = datetime.fromtimestamp(at if at is not None else time.time(), tz=UTC)
    return moment.isoformat().replace("+00:00", "Z")


def error_body(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error shape."""
    return {"type": "error", "error": {"type": kind, "message": message}}


ERROR_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
"""Anthropic's error type per HTTP status."""


@dataclass
class FakeBatch:
    """One created batch, as the server keeps it."""

    id: str
    """'msgbatch_...'."""
    custom_ids: list[str]
    """Its requests' custom_ids, in order."""
    params: dict[str, dict[str, Any]]
    """Each request's params by custom_id."""
    attempts: dict[str, int]
    """Each custom_id's attempt (0: no earlier batch held it)."""
    created_at: float
    """Unix time of creation."""
    retrieves: int = 0
    """Retrieve calls so far."""
    ended_at: float | None = None
    """Unix time it ended (None while in progress)."""
    cancel_initiated_at: float | None = None
    """Unix time of the cancel request."""
    results: list[dict[str, Any]] = field(default_factory=list)
    """The JSONL lines of its results, made when it ends."""


class FakeAnthropicServer:
    """Context manager: ``with FakeAnthropicServer() as s: s.url`` (the ``api_base``)."""

    def __init__(
        self,
        responder: Responder = echo_responder,
        *,
        steps: int = 2,
        never_end: bool = False,
        fail: dict[str | Predicate, Outcome] | FailFn | None = None,
        api_key: str | None = None,
        status_override: int | StatusOverride | None = None,
        retry_after_s: float = 1.0,
        prompt_cache: Literal["read", "write"] = "read",
    ) -> None:
        self.responder = responder
        self.steps = steps
        """Retrieves a batch stays in_progress before it ends."""
        self.never_end = never_end
        """True: batches stay in_progress forever."""
        self.fail = fail
        self.api_key = api_key
        """When set, the key every request must carry (else 401 ``authentication_error``)."""
        self.status_override = status_override
        """A status every batch endpoint answers instead (or a (method, path) -> status
        function); may be changed while the server runs."""
        self.retry_after_s = retry_after_s
        """The retry-after header of an overriding 429."""
        self.prompt_cache = prompt_cache
        self.online_requests: list[dict[str, Any]] = []
        """Bodies of ``POST /v1/messages``, in arrival order."""
        self.batches: list[FakeBatch] = []
        """Created batches, oldest first."""
        self.retrieves: Counter[str] = Counter()
        """Retrieve calls per batch id."""
        self.result_reads: Counter[str] = Counter()
        """Results downloads per batch id."""
        self.cancelled: list[str] = []
        """Batch ids a cancel was asked for, in order."""
        self.api_keys: list[str] = []
        """The key every request carried (``x-api-key``, as litellm sends it, or ``Authorization:
        Bearer``, as the ``anthropic`` SDK does), '' when none: for secrets tests."""
        self.paths: list[tuple[str, str]] = []
        """(method, path) of every request, in arrival order."""
        self._seen: Counter[str] = Counter()
        self._lock = threading.RLock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """What a user puts in ``judge.api_base`` (litellm appends ``/v1/messages`` to it)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def batch(self, batch_id: str) -> FakeBatch:
        """The batch of ``batch_id`` (KeyError when none)."""
        with self._lock:
            for b in self.batches:
                if b.id == batch_id:
                    return b
        raise KeyError(batch_id)

    # -- answers ---------------------------------------------------------------------------

    def _reply(self, params: dict[str, Any]) -> AnthropicReply:
        reply = self.responder(params)
        return AnthropicReply(text=reply) if isinstance(reply, str) else reply

    def message(self, params: dict[str, Any], reply: AnthropicReply) -> dict[str, Any]:
        """The Messages API's answer to ``params`` with ``reply``'s text (cut as the API cuts)."""
        text, stop_reason, stop_sequence = reply.text, reply.stop_reason, None
        hits = [(text.find(s), s) for s in params.get("stop_sequences") or () if s in text]
        if hits:
            at, stop_sequence = min(hits)
            text, stop_reason = text[:at], "stop_sequence"
        tokens = encode(text)
        if len(tokens) > params["max_tokens"]:
            text, stop_reason, stop_sequence = (
                decode(tokens[: params["max_tokens"]]),
                "max_tokens",
                None,
            )
        usage = request_usage(params, self.prompt_cache)
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": params["model"],
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop_reason,
            "stop_sequence": stop_sequence,
            "usage": {**usage, "output_tokens": count_tokens(text)},
        }

    def _online(self, params: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.online_requests.append(params)
        problem = invalid_params(params)
        if problem:
            return 400, error_body("invalid_request_error", problem), {}
        reply = self._reply(params)
        if reply.status != 200:
            kind = ERROR_KINDS.get(reply.status, "api_error")
            return (
                reply.status,
                error_body(kind, reply.text or f"scripted {reply.status}"),
                (reply.headers),
            )
        return 200, self.message(params, reply), reply.headers

    # -- batches -----------------------------------------------------------------------------

    def _scripted(self, custom_id: str, params: dict[str, Any], attempt: int) -> str | None:
        if self.fail is None:
            return None
        if callable(self.fail):
            return self.fail(custom_id, params, attempt)
        for key, outcome in self.fail.items():
            if key == custom_id or (callable(key) and key(custom_id, params)):
                return outcome
        return None

    def _result(self, batch: FakeBatch, custom_id: str) -> dict[str, Any]:
        params = batch.params[custom_id]
        if batch.cancel_initiated_at is not None:
            return {"type": "canceled"}
        outcome = self._scripted(custom_id, params, batch.attempts[custom_id])
        if outcome in ("expired", "canceled"):
            return {"type": outcome}
        problem = invalid_params(params)
        if outcome == "invalid_request" or problem:
            why = problem or "scripted invalid request"
            return _errored("invalid_request_error", why)
        if outcome == "overloaded":
            return _errored("overloaded_error", "Overloaded")
        if outcome == "errored":
            return _errored("api_error", "Internal server error")
        reply = self._reply(params)
        if reply.status != 200:
            kind = ERROR_KINDS.get(reply.status, "api_error")
            kind = "api_error" if kind in ("rate_limit_error", "authentication_error") else kind
            return _errored(kind, reply.text or f"scripted {reply.status}")
        return {"type": "succeeded", "message": self.message(params, reply)}

    def _end(self, batch: FakeBatch) -> None:
        batch.results = [
            {"custom_id": cid, "result": self._result(batch, cid)} for cid in batch.custom_ids
        ]
        batch.ended_at = time.time()

    def _create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, error_body("invalid_request_error", "requests: at least one is required")
        ids = [r.get("custom_id") if isinstance(r, dict) else None for r in requests]
        for cid in ids:
            if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
                return 400, error_body(
                    "invalid_request_error",
                    f"requests.custom_id: {cid!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$",
                )
        dupes = [cid for cid, n in Counter(ids).items() if n > 1]
        if dupes:
            return 400, error_body(
                "invalid_request_error", f"custom_id {dupes[0]!r} is not unique in the batch"
            )
        with self._lock:
            batch = FakeBatch(
                id=f"msgbatch_{uuid.uuid4().hex[:24]}",
                custom_ids=[str(c) for c in ids],
                params={r["custom_id"]: r.get("params") for r in requests},
                attempts={str(c): self._seen[str(c)] for c in ids},
                created_at=time.time(),
            )
            self._seen.update(batch.custom_ids)
            self.batches.append(batch)
            return 200, self._batch_body(batch)

    def _retrieve(self, batch: FakeBatch) -> dict[str, Any]:
        with self._lock:
            self.retrieves[batch.id] += 1
            batch.retrieves += 1
            if batch.ended_at is None:
                over = batch.retrieves > self.steps and not self.never_end
                if over or batch.cancel_initiated_at is not None:
                    self._end(batch)
            return self._batch_body(batch)

    def _cancel(self, batch: FakeBatch) -> dict[str, Any]:
        with self._lock:
            self.cancelled.append(batch.id)
            if batch.ended_at is None and batch.cancel_initiated_at is None:
                batch.cancel_initiated_at = time.time()
            return self._batch_body(batch)

    def _batch_body(self, batch: FakeBatch) -> dict[str, Any]:
        ended = batch.ended_at is not None
        counts = Counter(line["result"]["type"] for line in batch.results)
        if ended:
            status = "ended"
        elif batch.cancel_initiated_at is not None:
            status = "canceling"
        else:
            status = "in_progress"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                "processing": 0 if ended else len(batch.custom_ids),
                "succeeded": counts["succeeded"],
                "errored": counts["errored"],
                "canceled": counts["canceled"],
                "expired": counts["expired"],
            },
            "ended_at": now_iso(batch.ended_at) if ended else None,
            "created_at": now_iso(batch.created_at),
            "expires_at": now_iso(batch.created_at + 86400),
            "archived_at": None,
            "cancel_initiated_at": (
                now_iso(batch.cancel_initiated_at) if batch.cancel_initiated_at else None
            ),
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def _list(self, query: dict[str, list[str]]) -> dict[str, Any]:
        limit = int((query.get("limit") or ["20"])[0])
        after = (query.get("after_id") or [None])[0]
        with self._lock:
            newest_first = list(reversed(self.batches))
            start = 0
            if after is not None:
                ids = [b.id for b in newest_first]
                start = ids.index(after) + 1 if after in ids else len(ids)
            page = newest_first[start : start + limit]
            data = [self._batch_body(b) for b in page]
            more = start + limit < len(newest_first)
        return {
            "data": data,
            "has_more": more,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }

    def _override(self, method: str, path: str) -> int | None:
        if self.status_override is None or not path.startswith("/v1/messages/batches"):
            return None
        if callable(self.status_override):
            return self.status_override(method, path)
        return self.status_override

    # -- HTTP --------------------------------------------------------------------------------

    def _route(
        self, method: str, target: str, body: dict[str, Any], key: str
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body or JSONL bytes, headers) for one request."""
        split = urlsplit(target)
        path = split.path.rstrip("/")
        with self._lock:
            self.paths.append((method, path))
            self.api_keys.append(key)
        if self.api_key is not None and key != self.api_key:
            return 401, error_body("authentication_error", "invalid x-api-key"), {}
        status = self._override(method, path)
        if status is not None:
            headers = {"retry-after": f"{self.retry_after_s:g}"} if status == 429 else {}
            kind = ERROR_KINDS.get(status, "api_error")
            return status, error_body(kind, f"scripted {status}"), headers
        if method == "POST" and path == "/v1/messages":
            return self._online(body)
        if path == "/v1/messages/batches":
            if method == "POST":
                status, answer = self._create(body)
                return status, answer, {}
            return 200, self._list(parse_qs(split.query)), {}
        match = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results|/cancel)?", path)
        if match is None:
            return 404, error_body("not_found_error", f"Not found: {method} {path}"), {}
        try:
            batch = self.batch(match.group(1))
        except KeyError:
            return 404, error_body("not_found_error", f"no batch {match.group(1)}"), {}
        tail = match.group(2)
        if tail == "/cancel" and method == "POST":
            return 200, self._cancel(batch), {}
        if tail == "/results" and method == "GET":
            return self._results(batch)
        if tail is None and method == "GET":
            return 200, self._retrieve(batch), {}
        return 405, error_body("invalid_request_error", f"{method} not allowed on {path}"), {}

    def _results(self, batch: FakeBatch) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            if batch.ended_at is None:
                message = f"batch {batch.id} has not ended: its results are not available yet"
                return 400, error_body("invalid_request_error", message), {}
            self.result_reads[batch.id] += 1
            lines = "".join(json.dumps(line) + "\n" for line in batch.results)
        return 200, lines.encode(), {"Content-Type": "application/binary"}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (~40 ms)

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b""
                if len(raw) < length:  # the client died mid-send
                    self.close_connection = True
                    return
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = None
                key = self.headers.get("x-api-key") or _bearer(self.headers.get("Authorization"))
                if body is None or not isinstance(body, dict):
                    error = error_body("invalid_request_error", "body: invalid JSON")
                    status, answer, headers = 400, error, {}
                else:
                    status, answer, headers = server._route(method, self.path, body, key)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                if "Content-Type" not in headers:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                self._serve("POST")

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def log_message(self, *args: Any) -> None:
                return  # quiet

        return Handler


def _bearer(header: str | None) -> str:
    """The key of an ``Authorization: Bearer <key>`` header (the SDK's way), else ''."""
    scheme, _, key = (header or "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


def _errored(kind: str, message: str) -> dict[str, Any]:
    """An errored batch result: Anthropic's error body under ``error``."""
    return {"type": "errored", "error": error_body(kind, message)}
