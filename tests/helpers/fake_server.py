"""An OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks.

Speaks just enough of ``POST /v1/chat/completions`` (with ``logprobs`` when a reply carries
them) and ``POST /v1/embeddings`` for litellm's ``openai/`` provider, so
the real gateway path (litellm, HTTP, retries, cache) is exercised without the internet.
Answers come from a ``responder`` function; it may return a ``FakeReply`` to script
errors (429 with Retry-After, 500, 401), over-long text or a 'length' finish.

``faults=FaultPlan(rate=0.3, seed=0)`` makes it an unreliable provider: a share of chat
requests gets a 429 with Retry-After, a 500, a 503, no answer before the client's timeout,
a dropped connection, an empty answer, or (JSON mode only) an answer cut in half. Which
request gets which fault depends only on the request's content and how many times that
content was sent before, never on thread timing, so a faulty run is reproducible.

It also speaks OpenAI's Batch API (``fake_batches.py``): ``POST /v1/files`` (multipart,
purpose=batch), ``GET /v1/files/{id}[/content]``, ``POST /v1/batches``, ``GET
/v1/batches[/{id}]`` and ``POST /v1/batches/{id}/cancel``. Each batch line is answered by the
same ``responder`` and with the same body as ``/v1/chat/completions`` would answer it online.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from runner.api.text import count_tokens
from tests.helpers.fake_batches import Batches, BatchFail, BatchHTTP


@dataclass
class FakeReply:
    """A scripted answer: text, or an HTTP error."""

    text: str = ""
    """The assistant message."""
    status: int = 200
    """HTTP status; non-200 sends an OpenAI-style error body."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers (e.g. Retry-After)."""
    finish_reason: str = "stop"
    """'stop' or 'length'."""
    top_logprobs: list[dict[str, float]] | None = None
    """Per generated token, its alternatives' log-probabilities (OpenAI's logprobs.content)."""
    cached_tokens: int = 0
    """Prompt tokens to report as read from the prefix cache (usage.prompt_tokens_details)."""


FAULT_KINDS = ("429", "500", "503", "timeout", "drop", "empty", "truncated_json")
"""Every fault the server can inject; 'truncated_json' only hits JSON-mode requests."""


@dataclass(frozen=True)
class FaultPlan:
    """Which requests fail, and how: reproducible from ``seed`` and the request alone."""

    rate: float = 0.3
    """Share of attempts that get a fault (each attempt is drawn anew)."""
    seed: int = 0
    """Another seed, another fault sequence."""
    kinds: tuple[str, ...] = FAULT_KINDS
    """The faults to draw from, uniformly."""
    retry_after_s: float = 0.2
    """The Retry-After header of a 429, in seconds."""
    hold_s: float = 2.0
    """How long a 'timeout' fault keeps the client waiting: set it above the client's timeout."""

    def draw(self, key: str, attempt: int, json_mode: bool) -> str | None:
        """The fault for the ``attempt``-th (0-based) sending of the request ``key``, or None."""
        rng = random.Random(f"{self.seed}:{key}:{attempt}")  # str seeds hash stably (SHA-512)
        if rng.random() >= self.rate:
            return None
        kinds = [k for k in self.kinds if k != "truncated_json" or json_mode]
        return rng.choice(kinds) if kinds else None


@dataclass(frozen=True)
class Event:
    """One chat request as the faulty server saw it."""

    at: float
    """time.monotonic() when it arrived."""
    key: str
    """SHA-256 of the request body (its canonical JSON)."""
    fault: str | None
    """The fault injected, or None when it was answered normally."""


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 of the request's canonical JSON: same content, same key."""
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()


Responder = Callable[[dict[str, Any]], "str | FakeReply"]
Embedder = Callable[[str], list[float]]
"""text -> vector, for ``POST /v1/embeddings``."""


def letter_embedder(text: str) -> list[float]:
    """A deterministic 26-d vector of letter frequencies: similar texts, similar vectors."""
    counts = [0.0] * 26
    for ch in text.lower():
        if "a" <= ch <= "z":
            counts[ord(ch) - 97] += 1.0
    return counts


def echo_responder(request: dict[str, Any]) -> str:
    """A deterministic answer derived from the last message: its first sentence-like line."""
    content = str(request["messages"][-1]["content"])
    words = content.split()[:40]
    return " ".join(words).rstrip(".") + "."


class FakeOpenAIServer:
    """Context manager: ``with FakeOpenAIServer(responder) as s: s.url``."""

    def __init__(
        self,
        responder: Responder = echo_responder,
        latency_s: float = 0.0,
        embedder: Embedder = letter_embedder,
        faults: FaultPlan | None = None,
        *,
        batch_steps: int = 2,
        batch_fail: BatchFail | None = None,
        batch_never_end: bool = False,
        batch_http: BatchHTTP | None = None,
    ) -> None:
        """A server answering with ``responder``; the ``batch_*`` keywords script its batches.

        ``batch_steps``: retrieves a batch stays ``in_progress``; ``batch_fail(custom_id, body,
        attempt)``: a line's scripted outcome (``fake_batches.BatchFail``); ``batch_never_end``:
        batches stay ``in_progress`` for ever; ``batch_http(method, path)``: a scripted HTTP
        reply (401, 429, 500) for a files or batches request, None to serve it.
        """
        self.responder = responder
        self.faults = faults
        self.events: list[Event] = []
        """Every chat request when ``faults`` is set, in arrival order."""
        self.injected: Counter[str] = Counter()
        """Faults injected, by kind."""
        self.served: Counter[str] = Counter()
        """Normal 200 answers per request key: 1 each when no completed call is paid twice."""
        self._sent: Counter[str] = Counter()
        self.embedder = embedder
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self.served_models: list[str] = []
        """What ``GET /v1/models`` lists (empty: the server does not say, as many do not)."""
        self.authorizations: list[str] = []
        """The Authorization header of every POST, in arrival order (secrets tests)."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.intervals: list[tuple[float, float]] = []
        """(start, end) monotonic times of every answered request, in arrival order."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        """Set when the server stops: a request still waiting out ``latency_s`` ends at once,
        so no answer is written after the test that started the server has ended."""
        self.batches = Batches(
            self._batch_line,
            steps=batch_steps,
            fail=batch_fail,
            never_end=batch_never_end,
            http=batch_http,
        )
        """The files and batches it holds, and what tests read of them (``fake_batches.py``)."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # serve_forever's default poll of 0.5 s is how long shutdown() waits on an idle server:
        # half a second at the end of every test that starts one.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL to use as ``api_base``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def _fault(self, request: dict[str, Any]) -> tuple[str, str | None]:
        """The request's key and the fault it gets (None when answered normally)."""
        key = request_key(request)
        if self.faults is None or "messages" not in request:
            return key, None
        json_mode = (request.get("response_format") or {}).get("type") == "json_object"
        with self._lock:
            attempt = self._sent[key]
            self._sent[key] += 1
            fault = self.faults.draw(key, attempt, json_mode)
            self.events.append(Event(time.monotonic(), key, fault))
            if fault:
                self.injected[fault] += 1
        return key, fault

    def _faulty(self, reply: FakeReply, fault: str) -> FakeReply:
        """What the client gets instead of ``reply`` (faults that send an answer)."""
        assert self.faults is not None
        if fault == "429":
            return FakeReply(status=429, headers={"Retry-After": f"{self.faults.retry_after_s:g}"})
        if fault in ("500", "503"):
            return FakeReply(status=int(fault))
        text = "" if fault == "empty" else reply.text[: len(reply.text) // 2]
        return FakeReply(text=text, finish_reason="stop")

    def _answer(
        self, request: dict[str, Any], key: str = "", fault: str | None = None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        start = time.monotonic()
        with self._lock:
            self.requests.append(request)
            index = len(self.intervals)
            self.intervals.append((start, start))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency_s:
                self._stopping.wait(self.latency_s)
            reply = self.responder(request) if "messages" in request else FakeReply()
        finally:
            with self._lock:
                self.in_flight -= 1
                self.intervals[index] = (start, time.monotonic())
        if isinstance(reply, str):
            reply = FakeReply(text=reply)
        if fault:
            reply = self._faulty(reply, fault)
        elif reply.status == 200 and "messages" in request:
            with self._lock:
                self.served[key] += 1
        if reply.status != 200:
            return reply.status, _error_body(reply), reply.headers
        if "input" in request and "messages" not in request:
            return 200, self._embeddings(request), reply.headers
        return 200, _chat_body(request, reply), reply.headers

    def _batch_line(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A batch line's status and body: the responder's answer, as online (no faults)."""
        reply = self.responder(request)
        if isinstance(reply, str):
            reply = FakeReply(text=reply)
        if reply.status != 200:
            return reply.status, _error_body(reply)
        return 200, _chat_body(request, reply)

    def _embeddings(self, request: dict[str, Any]) -> dict[str, Any]:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        return {
            "object": "list",
            "model": request.get("model", "fake"),
            "data": [
                {"object": "embedding", "index": i, "embedding": self.embedder(str(t))}
                for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": sum(count_tokens(str(t)) for t in texts), "total_tokens": 0},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (~40 ms)

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self._body()
                if raw is None:  # the client died mid-send: no request, as for a provider
                    self.close_connection = True
                    return
                with server._lock:
                    server.authorizations.append(self.headers.get("Authorization", ""))
                if server.batches.serves(self.path):
                    self._send(*server.batches.post(self.path, self.headers, raw))
                    return
                request = json.loads(raw or b"{}")
                key, fault = server._fault(request)
                if fault in ("timeout", "drop"):
                    hold = server.faults.hold_s if fault == "timeout" and server.faults else 0.0
                    self._hang_up(hold)
                    return
                status, body, headers = server._answer(request, key, fault)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes | None:
                """The request's body (Content-Length or chunked), None when cut short."""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    return _read_chunked(self.rfile)
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                return raw if len(raw) == length else None

            def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                """One response; ``headers`` carries its Content-Type."""
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _hang_up(self, after_s: float) -> None:
                """Close the connection without an answer, at once or after ``after_s``."""
                time.sleep(after_s)
                self.close_connection = True
                with contextlib.suppress(OSError):  # the client gave up first
                    self.connection.shutdown(socket.SHUT_RDWR)

            def do_DELETE(self) -> None:  # noqa: N802
                if server.batches.serves(self.path):
                    self._send(*server.batches.delete(self.path))
                    return
                self.send_error(405)

            def do_GET(self) -> None:  # noqa: N802
                if server.batches.serves(self.path):
                    self._send(*server.batches.get(self.path))
                    return
                models = [{"id": name, "object": "model"} for name in server.served_models]
                data = json.dumps({"object": "list", "data": models})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, *args: Any) -> None:
                return  # quiet

        return Handler


def _chat_body(request: dict[str, Any], reply: FakeReply) -> dict[str, Any]:
    """The chat completion answering ``request`` with ``reply`` (tokens counted as online)."""
    prompt = sum(count_tokens(str(m.get("content", ""))) for m in request["messages"])
    completion = count_tokens(reply.text)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": reply.finish_reason,
                **({"logprobs": _logprobs(reply.top_logprobs)} if reply.top_logprobs else {}),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            **(
                {"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
                if reply.cached_tokens
                else {}
            ),
        },
    }


def _error_body(reply: FakeReply) -> dict[str, Any]:
    """OpenAI's error body for a scripted non-200 reply."""
    return {"error": {"message": reply.text or f"scripted {reply.status}", "type": "fake"}}


def _logprobs(per_token: list[dict[str, float]]) -> dict[str, Any]:
    content = []
    for alternatives in per_token:
        best = max(alternatives, key=lambda token: alternatives[token])
        top = [
            {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives.items()
        ]
        content.append(
            {
                "token": best,
                "logprob": alternatives[best],
                "bytes": list(best.encode()),
                "top_logprobs": top,
            }
        )
    return {"content": content}


def _read_chunked(stream: Any) -> bytes | None:
    """A chunked request body, None when the client stopped mid-body."""
    out = bytearray()
    while True:
        size_line = stream.readline()
        if not size_line:
            return None
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            stream.readline()  # the blank line after the last chunk (no trailers sent)
            return bytes(out)
        chunk = stream.read(size)
        if len(chunk) < size:
            return None
        out += chunk
        stream.readline()


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end at t closes before a start at t)."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    best = current = 0
    for _, step in events:
        current += step
        best = max(best, current)
    return best
