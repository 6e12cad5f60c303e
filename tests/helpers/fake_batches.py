"""OpenAI's Batch API as the loopback server speaks it: files, batches, progress, results.

The shapes are OpenAI's (``openai`` SDK types parse them): a file object, a batch object with
``request_counts`` and every ``*_at`` time, output and error files in JSONL with one
``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}`` line per
request. A batch is created ``validating``; each retrieve moves it on: ``in_progress`` for
``steps`` retrieves (its counts growing), ``finalizing``, then ``completed`` (or ``expired``
when a line was scripted to expire). Lines are answered when the batch starts running, by the
server's chat answer function, so a batch answers what ``/v1/chat/completions`` would.
Answers with status 200 go to the output file; other statuses, expired and cancelled lines to
the error file (as OpenAI does); a line scripted 'missing' goes to neither.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

BatchFail = Callable[[str, dict[str, Any], int], "str | int | None"]
"""(custom_id, body, attempt) -> a line's scripted outcome. ``attempt`` counts the earlier
batches that held the same custom_id (0 the first time). None: answered by the responder;
'error': a 500 response (error file); an int: a response with that HTTP status; 'expired':
the batch expires before the line runs (``batch_expired``, the batch ends ``expired``);
'missing': the line is in neither file."""

BatchHTTP = Callable[[str, str], Any]
"""(method, path) -> a ``FakeReply`` to send instead of serving a files or batches request
(401, 429 with Retry-After, 500), or None to serve it."""

LineAnswer = Callable[[dict[str, Any]], "tuple[int, dict[str, Any]]"]
"""A chat request body -> (HTTP status, response body), as the online endpoint answers."""

ENDED = ("completed", "failed", "expired", "cancelled")
"""Statuses after which a batch never changes."""

ENDPOINTS = ("/v1/chat/completions",)
"""The batch endpoints served."""

_IDS = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}{next(_IDS):04d}{uuid.uuid4().hex[:8]}"


@dataclass
class FakeFile:
    """An uploaded or generated file."""

    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def as_json(self) -> dict[str, Any]:
        """OpenAI's file object."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "status_details": None,
        }


@dataclass
class FakeBatch:
    """One batch: what was asked, how far it got, what it answered."""

    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    created_at: int
    custom_ids: list[str] = field(default_factory=list)
    """The custom_ids of its input file, in order (empty until validated)."""
    status: str = "validating"
    retrieves: int = 0
    """GET /v1/batches/{id} calls so far."""
    outcomes: list[tuple[str, int | str, dict[str, Any] | None]] = field(default_factory=list)
    """Per line: custom_id, HTTP status or 'expired'/'missing', response body."""
    ran: int = 0
    """Lines run so far."""
    errors: dict[str, Any] | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    times: dict[str, int] = field(default_factory=dict)
    """``in_progress_at``, ``completed_at``, ... as they happen."""

    def counts(self) -> dict[str, int]:
        """``request_counts``: lines answered with 200, lines answered otherwise (expired and
        cancelled lines are counted in neither, as OpenAI reports them)."""
        done = self.outcomes[: self.ran]
        completed = sum(1 for _, status, _ in done if status == 200)
        failed = sum(1 for _, status, _ in done if isinstance(status, int) and status != 200)
        return {"total": len(self.custom_ids), "completed": completed, "failed": failed}

    def as_json(self) -> dict[str, Any]:
        """OpenAI's batch object."""
        stamps = (
            "in_progress_at",
            "finalizing_at",
            "completed_at",
            "failed_at",
            "expired_at",
            "cancelling_at",
            "cancelled_at",
        )
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": self.errors,
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + 86400,
            **{name: self.times.get(name) for name in stamps},
            "request_counts": self.counts(),
            "metadata": self.metadata,
        }


class Batches:
    """The files and batches of one loopback server, and the records tests read."""

    def __init__(
        self,
        answer: LineAnswer,
        *,
        steps: int = 2,
        fail: BatchFail | None = None,
        never_end: bool = False,
        http: BatchHTTP | None = None,
    ) -> None:
        """Batches whose lines ``answer`` answers; the rest as ``FakeOpenAIServer`` says."""
        self.answer = answer
        self.steps = steps
        self.fail = fail
        self.never_end = never_end
        self.http = http
        self.files: dict[str, FakeFile] = {}
        """Every file, uploaded or written, by id."""
        self.batches: dict[str, FakeBatch] = {}
        """Every batch, by id, in creation order."""
        self.attempts: Counter[str] = Counter()
        """Batches that have held each custom_id."""
        self.deleted: list[str] = []
        """Ids of the files clients deleted."""
        self.http_log: list[tuple[str, str]] = []
        """(method, path) of every files or batches request, in arrival order."""
        self._lock = threading.Lock()

    # --- records for tests -------------------------------------------------------------------

    @property
    def created(self) -> list[tuple[str, list[str]]]:
        """(batch id, its custom_ids) of every batch created, in order."""
        return [(b.id, list(b.custom_ids)) for b in self.batches.values()]

    @property
    def uploads(self) -> list[FakeFile]:
        """The files clients uploaded (purpose 'batch'), in order."""
        return [f for f in self.files.values() if f.purpose == "batch"]

    def retrieves(self, batch_id: str) -> int:
        """How many times ``batch_id`` was retrieved."""
        return self.batches[batch_id].retrieves

    # --- HTTP --------------------------------------------------------------------------------

    @staticmethod
    def serves(path: str) -> bool:
        """True for the paths of the files and batches endpoints."""
        return re.match(r"^/v1/(files|batches)(/|\?|$)", path) is not None

    def post(
        self, path: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        """Answer a POST: an upload, a batch creation or a cancel."""
        route = path.split("?", 1)[0]
        scripted = self._scripted("POST", route)
        if scripted is not None:
            return scripted
        with self._lock:
            if route == "/v1/files":
                return self._upload(headers.get("Content-Type", ""), raw)
            if route == "/v1/batches":
                return self._create(json.loads(raw or b"{}"))
            match = re.fullmatch(r"/v1/batches/([^/]+)/cancel", route)
            if match:
                return self._cancel(match.group(1))
        return _error(404, f"no such endpoint: POST {route}", "invalid_request_error")

    def get(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        """Answer a GET: a file, its content, a batch, or the list of batches."""
        route, _, query = path.partition("?")
        scripted = self._scripted("GET", route)
        if scripted is not None:
            return scripted
        with self._lock:
            if route == "/v1/batches":
                return self._list(dict(p.split("=", 1) for p in query.split("&") if "=" in p))
            match = re.fullmatch(r"/v1/batches/([^/]+)", route)
            if match:
                return self._retrieve(match.group(1))
            match = re.fullmatch(r"/v1/files/([^/]+)(/content)?", route)
            if match:
                found = self.files.get(match.group(1))
                if found is None:
                    return _error(
                        404, f"No such File object: {match.group(1)}", "invalid_request_error"
                    )
                if match.group(2):
                    return 200, found.data, {"Content-Type": "application/octet-stream"}
                return _json(200, found.as_json())
        return _error(404, f"no such endpoint: GET {route}", "invalid_request_error")

    def delete(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        """Answer a DELETE of a file."""
        route = path.split("?", 1)[0]
        scripted = self._scripted("DELETE", route)
        if scripted is not None:
            return scripted
        match = re.fullmatch(r"/v1/files/([^/]+)", route)
        with self._lock:
            if match and match.group(1) in self.files:
                del self.files[match.group(1)]
                self.deleted.append(match.group(1))
                return _json(200, {"id": match.group(1), "object": "file", "deleted": True})
        return _error(404, f"No such File object: {route}", "invalid_request_error")

    def _scripted(self, method: str, route: str) -> tuple[int, bytes, dict[str, str]] | None:
        with self._lock:
            self.http_log.append((method, route))
        reply = self.http(method, route) if self.http else None
        if reply is None:
            return None
        status, data, headers = _error(reply.status, reply.text or f"scripted {reply.status}")
        return status, data, {**headers, **reply.headers}

    # --- files -------------------------------------------------------------------------------

    def _upload(self, content_type: str, raw: bytes) -> tuple[int, bytes, dict[str, str]]:
        fields = _multipart(content_type, raw)
        if "file" not in fields or "purpose" not in fields:
            return _error(400, "a file upload needs 'file' and 'purpose'", "invalid_request_error")
        purpose = fields["purpose"][1].decode()
        if purpose != "batch":
            return _error(400, f"purpose {purpose!r} is not served here", "invalid_request_error")
        filename, data = fields["file"]
        made = FakeFile(_id("file-"), filename or "upload", purpose, data, int(time.time()))
        self.files[made.id] = made
        return _json(200, made.as_json())

    def _write(self, name: str, lines: list[dict[str, Any]]) -> str | None:
        if not lines:
            return None
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        made = FakeFile(_id("file-"), name, "batch_output", data, int(time.time()))
        self.files[made.id] = made
        return made.id

    # --- batches -----------------------------------------------------------------------------

    def _create(self, body: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            return _error(400, f"Input file {file_id} not found", "invalid_request_error")
        if body.get("endpoint") not in ENDPOINTS:
            return _error(
                400, f"endpoint {body.get('endpoint')!r} is not served", "invalid_request_error"
            )
        if body.get("completion_window") != "24h":
            return _error(400, "completion_window must be '24h'", "invalid_request_error")
        batch = FakeBatch(
            id=_id("batch_"),
            input_file_id=str(file_id),
            endpoint=str(body["endpoint"]),
            completion_window="24h",
            metadata=body.get("metadata"),
            created_at=int(time.time()),
        )
        self.batches[batch.id] = batch
        self._validate(batch)
        return _json(200, batch.as_json())

    def _validate(self, batch: FakeBatch) -> None:
        """Read the input file: its custom_ids, or the batch fails as OpenAI fails it."""
        lines = self.files[batch.input_file_id].data.decode().splitlines()
        seen: set[str] = set()
        for number, text in enumerate(lines, start=1):
            problem = _bad_line(text, batch.endpoint, seen)
            if problem:
                code, message = problem
                batch.errors = {
                    "object": "list",
                    "data": [{"code": code, "message": message, "param": None, "line": number}],
                }
                batch.custom_ids = []
                return
            custom_id = json.loads(text)["custom_id"]
            seen.add(custom_id)
            batch.custom_ids.append(custom_id)
        if not lines:
            batch.errors = {
                "object": "list",
                "data": [
                    {
                        "code": "empty_file",
                        "message": "The input file is empty.",
                        "param": None,
                        "line": None,
                    }
                ],
            }
            return
        for custom_id in batch.custom_ids:
            self.attempts[custom_id] += 1

    def _run(self, batch: FakeBatch) -> None:
        """Answer every line (the batch starts running)."""
        lines = [json.loads(t) for t in self.files[batch.input_file_id].data.decode().splitlines()]
        for line in lines:
            custom_id, body = line["custom_id"], line["body"]
            scripted = (
                self.fail(custom_id, body, self.attempts[custom_id] - 1) if self.fail else None
            )
            if scripted is None:
                status, answer = self.answer(body)
                batch.outcomes.append((custom_id, status, answer))
            elif scripted == "error":
                batch.outcomes.append((custom_id, 500, _server_error()))
            elif isinstance(scripted, int):
                batch.outcomes.append((custom_id, scripted, _error_json(scripted)))
            else:
                batch.outcomes.append((custom_id, str(scripted), None))

    def _retrieve(self, batch_id: str) -> tuple[int, bytes, dict[str, str]]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return _error(404, f"No batch found with id '{batch_id}'.", "invalid_request_error")
        batch.retrieves += 1
        self._advance(batch)
        return _json(200, batch.as_json())

    def _advance(self, batch: FakeBatch) -> None:
        """One step on, as a retrieve sees it."""
        now = int(time.time())
        if batch.status == "validating":
            if batch.errors:
                batch.status, batch.times["failed_at"] = "failed", now
                return
            batch.status, batch.times["in_progress_at"] = "in_progress", now
            self._run(batch)
            batch.ran = 0
        elif batch.status == "cancelling":
            self._end(batch, "cancelled", now)
            return
        elif batch.status == "in_progress":
            if self.never_end or batch.retrieves <= self.steps:
                share = min(batch.retrieves, self.steps) / (self.steps + 1)
                batch.ran = int(len(batch.outcomes) * share)
                return
            batch.ran = len(batch.outcomes)
            batch.status, batch.times["finalizing_at"] = "finalizing", now
        elif batch.status == "finalizing":
            expired = any(status == "expired" for _, status, _ in batch.outcomes)
            self._end(batch, "expired" if expired else "completed", now)

    def _end(self, batch: FakeBatch, status: str, now: int) -> None:
        """Write the output and error files: what ran, and what never will."""
        output, errors = [], []
        for index, (custom_id, outcome, body) in enumerate(batch.outcomes):
            if outcome == "missing":
                continue
            if status == "cancelled" and index >= batch.ran:
                errors.append(_line(custom_id, None, "batch_cancelled"))
            elif outcome == "expired":
                errors.append(_line(custom_id, None, "batch_expired"))
            else:
                assert isinstance(outcome, int) and body is not None
                response = {"status_code": outcome, "request_id": uuid.uuid4().hex, "body": body}
                (output if outcome == 200 else errors).append(_line(custom_id, response, None))
        if status == "cancelled":
            batch.outcomes = [
                o if i < batch.ran else (o[0], "cancelled", None)
                for i, o in enumerate(batch.outcomes)
            ]
        else:
            batch.ran = len(batch.outcomes)
        batch.output_file_id = self._write(f"{batch.id}_output.jsonl", output)
        batch.error_file_id = self._write(f"{batch.id}_error.jsonl", errors)
        batch.status, batch.times[f"{status}_at"] = status, now

    def _cancel(self, batch_id: str) -> tuple[int, bytes, dict[str, str]]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return _error(404, f"No batch found with id '{batch_id}'.", "invalid_request_error")
        if batch.status in ENDED or batch.status == "cancelling":
            return _error(
                400, f"Cannot cancel a batch with status '{batch.status}'.", "invalid_request_error"
            )
        if batch.status == "validating":
            self._run(batch)
        batch.status, batch.times["cancelling_at"] = "cancelling", int(time.time())
        return _json(200, batch.as_json())

    def _list(self, query: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
        """Newest first, ``limit`` (default 20) after the id ``after``, as OpenAI pages them."""
        ordered = list(reversed(self.batches.values()))
        if "after" in query:
            ids = [b.id for b in ordered]
            ordered = ordered[ids.index(query["after"]) + 1 :] if query["after"] in ids else []
        limit = int(query.get("limit", 20))
        page = ordered[:limit]
        return _json(
            200,
            {
                "object": "list",
                "data": [b.as_json() for b in page],
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
                "has_more": len(ordered) > limit,
            },
        )


def _bad_line(text: str, endpoint: str, seen: set[str]) -> tuple[str, str] | None:
    """The (code, message) OpenAI's validation gives a bad input line, or None."""
    try:
        line = json.loads(text)
    except ValueError:
        return "invalid_json_line", "This line is not parseable as valid JSON."
    if not isinstance(line, dict) or not {"custom_id", "method", "url", "body"} <= set(line):
        return "invalid_request", "Each line needs custom_id, method, url and body."
    if line["url"] != endpoint or line["method"] != "POST":
        return "url_mismatch", f"The line's URL {line['url']!r} is not the batch's {endpoint!r}."
    if line["custom_id"] in seen:
        return "duplicate_custom_id", f"The custom_id {line['custom_id']!r} is not unique."
    return None


def _line(custom_id: str, response: dict[str, Any] | None, code: str | None) -> dict[str, Any]:
    messages = {
        "batch_expired": "This request could not be executed before the completion window expired.",
        "batch_cancelled": "This request was not executed because the batch was cancelled.",
    }
    error = {"code": code, "message": messages[code]} if code else None
    return {"id": _id("batch_req_"), "custom_id": custom_id, "response": response, "error": error}


def _server_error() -> dict[str, Any]:
    return {
        "error": {
            "message": "The server had an error processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }


def _error_json(status: int) -> dict[str, Any]:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": f"scripted {status}", "type": kind, "param": None, "code": None}}


def _json(status: int, body: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
    return status, json.dumps(body).encode(), {"Content-Type": "application/json"}


def _error(status: int, message: str, kind: str = "fake") -> tuple[int, bytes, dict[str, str]]:
    return _json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body's fields: name -> (filename, bytes)."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        return {}
    out: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(b"--" + match.group(1).encode())[1:-1]:
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        disposition = head.decode(errors="replace")
        name = re.search(r'\bname="([^"]*)"', disposition)
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        if name:
            out[name.group(1)] = (
                filename.group(1) if filename else None,
                data.removesuffix(b"\r\n"),
            )
    return out
