"""A request's batch body: exactly what litellm posts online for it, built once per shape.

Both batch adapters send, for each request, the JSON body litellm's ``completion`` would post
online (``openai.py``: a chat-completions body; ``anthropic.py``: a Messages body), so a batch
answer is the answer the online call would have got and the cache may keep it under the
request's key.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

from runner.api.errors import LLMError
from runner.llm.batch.http_errors import one_line
from runner.llm.providers import load_litellm
from runner.llm.request import Request

MAX_SHAPES = 4096
"""Request shapes whose litellm body is kept (beyond it the cache starts again)."""

_MARK = f"<runner-batch-text-{uuid.uuid4().hex[:10]}-"
"""What stands for a message's text while litellm builds a shape's body."""


class Bodies:
    """What litellm posts online for a request, asked of litellm once per request shape.

    litellm's ``openai/`` provider changes a request by model (o-series models get
    ``max_completion_tokens``, lose ``temperature`` and log-probabilities, some have their
    system message sent as a user message) and by server (Anthropic's cache marks kept for an
    OpenAI-compatible proxy, stripped for OpenAI's own host). Rather than copy those rules,
    the body is litellm's own (``return_raw_request``: the request built up to the point of
    sending it). That takes ~10 ms, too slow for 50,000 lines, so litellm builds it once per
    shape (everything but the messages' texts, each text replaced by a marker) and each
    request's texts are put in place of the markers. A shape whose markers litellm does not
    pass through whole is built per request.
    """

    def __init__(self) -> None:
        """An empty cache of shapes."""
        self._templates: dict[str, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def body(self, request: Request) -> dict[str, Any]:
        """The chat-completions body litellm posts for ``request``."""
        texts, hollow = _hollow(request.messages)
        shape = json.dumps(
            [dataclasses.replace(request, messages=[]).litellm_kwargs(), hollow], sort_keys=True
        )
        with self._lock:
            known = shape in self._templates
            template = self._templates.get(shape)
        if not known:
            template = litellm_body(dataclasses.replace(request, messages=hollow))
            if not _whole(template, texts):
                template = None
            with self._lock:
                if len(self._templates) >= MAX_SHAPES:
                    self._templates.clear()
                self._templates[shape] = template
        if template is None:
            return litellm_body(request)
        filled: dict[str, Any] = _fill(template, texts)
        return filled


def litellm_body(request: Request) -> dict[str, Any]:
    """The JSON body litellm's ``completion`` would post for ``request``.

    Called as the gateway calls it (``drop_params=True``) and captured before sending: no
    HTTP, no key.
    """
    litellm = load_litellm()
    kwargs = request.litellm_kwargs()
    kwargs.update(num_retries=0, max_retries=0, drop_params=True)
    raw = litellm.utils.return_raw_request(litellm.CallTypes.completion, kwargs)
    body = raw.get("raw_request_body") if isinstance(raw, dict) else None
    if not isinstance(body, dict) or "messages" not in body:
        error = raw.get("error") if isinstance(raw, dict) else raw
        raise LLMError(
            f"{request.model}: litellm did not build the request's body for the batch "
            f"({one_line(error)}); set batch=false for this role"
        )
    extra = body.pop("extra_body", None) or {}
    return {**body, **extra}  # the OpenAI SDK merges extra_body into the JSON it posts


def _hollow(
    messages: list[dict[str, Any]],
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The messages with each text a marker (its whitespace kept), and marker -> text."""
    texts: dict[str, str] = {}

    def mark(text: str) -> str:
        if not text.strip():
            return text  # empty or blank: kept, part of the shape
        core = text.strip()
        marker = (
            text[: text.index(core)]
            + f"{_MARK}{len(texts)}>"
            + text[text.index(core) + len(core) :]
        )
        texts[marker] = text
        return marker

    hollow = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            message = {**message, "content": mark(content)}
        elif isinstance(content, list):
            blocks = [
                {**b, "text": mark(b["text"])}
                if isinstance(b, dict) and isinstance(b.get("text"), str)
                else b
                for b in content
            ]
            message = {**message, "content": blocks}
        hollow.append(message)
    return texts, hollow


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _whole(template: dict[str, Any], texts: dict[str, str]) -> bool:
    """True when each marker is one whole string of ``template``, once, and no marker is cut."""
    found = Counter(s for s in _strings(template) if _MARK in s)
    return all(found[marker] == 1 for marker in texts) and set(found) <= set(texts)


def _fill(value: Any, texts: dict[str, str]) -> Any:
    """``value`` with each marker replaced by its text."""
    if isinstance(value, str):
        return texts.get(value, value)
    if isinstance(value, dict):
        return {key: _fill(item, texts) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, texts) for item in value]
    return value
