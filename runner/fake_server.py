"""An OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks.

Speaks just enough of ``POST /v1/chat/completions`` (with ``logprobs`` when a reply carries
them) and ``POST /v1/embeddings`` for litellm's ``openai/`` provider, so
the real gateway path (litellm, HTTP, retries, cache) is exercised without the internet.
Answers come from a ``responder`` function; it may return a ``FakeReply`` to script
errors (429 with Retry-After, 500, 401), over-long text or a 'length' finish.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from runner.text import count_tokens


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
        self, responder: Responder = echo_responder, latency_s: float = 0.0, embedder: Embedder = letter_embedder
    ) -> None:
        self.responder = responder
        self.embedder = embedder
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        """The Authorization header of every POST, in arrival order (secrets tests)."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.intervals: list[tuple[float, float]] = []
        """(start, end) monotonic times of every answered request, in arrival order."""
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL to use as ``api_base``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        start = time.monotonic()
        with self._lock:
            self.requests.append(request)
            index = len(self.intervals)
            self.intervals.append((start, start))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
            reply = self.responder(request) if "messages" in request else FakeReply()
        finally:
            with self._lock:
                self.in_flight -= 1
                self.intervals[index] = (start, time.monotonic())
        if isinstance(reply, str):
            reply = FakeReply(text=reply)
        if reply.status != 200:
            error: dict[str, Any] = {"error": {"message": reply.text or f"scripted {reply.status}", "type": "fake"}}
            return reply.status, error, reply.headers
        if "input" in request and "messages" not in request:
            return 200, self._embeddings(request), reply.headers
        prompt = sum(count_tokens(str(m.get("content", ""))) for m in request["messages"])
        completion = count_tokens(reply.text)
        body: dict[str, Any] = {
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
            },
        }
        return 200, body, reply.headers

    def _embeddings(self, request: dict[str, Any]) -> dict[str, Any]:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        return {
            "object": "list",
            "model": request.get("model", "fake"),
            "data": [
                {"object": "embedding", "index": i, "embedding": self.embedder(str(t))} for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": sum(count_tokens(str(t)) for t in texts), "total_tokens": 0},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (~40 ms)

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.authorizations.append(self.headers.get("Authorization", ""))
                status, body, headers = server._answer(request)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                data = json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, *args: Any) -> None:
                return  # quiet

        return Handler


def _logprobs(per_token: list[dict[str, float]]) -> dict[str, Any]:
    content = []
    for alternatives in per_token:
        best = max(alternatives, key=lambda token: alternatives[token])
        top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives.items()]
        content.append({"token": best, "logprob": alternatives[best], "bytes": list(best.encode()), "top_logprobs": top})
    return {"content": content}


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end at t closes before a start at t)."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    best = current = 0
    for _, step in events:
        current += step
        best = max(best, current)
    return best
