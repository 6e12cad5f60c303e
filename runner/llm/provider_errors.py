"""Translate litellm's exceptions into ``runner.api.errors``, once, at the gateway.

The messages name the model alias and the fix, because they end the run as one line.
Classification goes by HTTP status first (litellm and the OpenAI SDK both attach it),
then by exception type for transport failures that carry none.
"""

from __future__ import annotations

import json
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

from runner.api.errors import (
    AuthError,
    ContextWindowError,
    InvalidAnswerError,
    LLMError,
    ModelUnreachableError,
    ProviderUnreachableError,
    RateLimitedError,
    TransientLLMError,
)
from runner.llm.endpoints import setting


def _retry_after(err: Any) -> float | None:
    """Seconds the server asked us to wait, from the exception or its HTTP response.

    Read from ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date (RFC 9110
    allows both).
    """
    headers = getattr(err, "headers", None) or {}
    response = getattr(err, "response", None)
    if not headers and response is not None:
        headers = getattr(response, "headers", None) or {}
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return float(millis) / 1000.0
        value = headers.get("retry-after") or headers.get("Retry-After")
        return _seconds(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def _seconds(value: str) -> float | None:
    try:
        return max(0.0, float(value))
    except ValueError:
        when = parsedate_to_datetime(value)  # raises ValueError/TypeError when not a date
        return max(0.0, when.timestamp() - time.time())


_TRANSPORT = {
    "Timeout",
    "APITimeoutError",
    "APIConnectionError",
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "ReadError",
    "RemoteProtocolError",
    "WriteError",
}


def _is_transport_failure(err: BaseException) -> bool:
    """True when the server was never reached or the connection dropped.

    litellm re-raises these as InternalServerError (status 500), so look down the chain.
    """
    seen: BaseException | None = err
    for _ in range(10):
        if seen is None:
            return False
        if type(seen).__name__ in _TRANSPORT or isinstance(seen, (ConnectionError, TimeoutError)):
            return True
        if "Connection error" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


_NO_CONNECTION = (
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname",
    "getaddrinfo failed",
    "no address associated",
    "connection refused",
    "network is unreachable",
    "no route to host",
    "proxyerror",
    "proxy error",
)
"""Words of a failure to connect at all (DNS, refused, no route, proxy), as opposed to a
timeout or a dropped connection mid-request, which a retry may get past."""


def _connect_failure(err: BaseException) -> str | None:
    """The chain's text naming why no connection was made at all, or None."""
    seen: BaseException | None = err
    for _ in range(10):
        if seen is None:
            return None
        text = f"{type(seen).__name__}: {seen}"
        lowered = text.lower()
        if "gaierror" in lowered or any(words in lowered for words in _NO_CONNECTION):
            return " ".join(text.split())[:200]
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    return None


def _provider_unreachable(role: str, alias: str, model: str, why: str) -> ProviderUnreachableError:
    """The one line for a provider's own host that cannot be reached: network, proxy, key."""
    provider = model.split("/", 1)[0] if "/" in model else "the provider"
    return ProviderUnreachableError(
        f"{role}={alias}: cannot connect to {provider}'s API ({why}); check this machine's network "
        "connection and proxy settings (HTTPS_PROXY), then that the API key in the environment is "
        "the provider's; not retried"
    )


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:300]


def _own_error(err: BaseException) -> LLMError | None:
    """An ``LLMError`` raised by an in-process provider, found under litellm's wrapping."""
    seen: BaseException | None = err
    for _ in range(10):
        if seen is None:
            return None
        if isinstance(seen, LLMError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def translate(
    err: Exception, role: str, alias: str, api_base: str | None, model: str = ""
) -> LLMError:
    """The ``runner.api.errors`` equivalent of a litellm (or llama.cpp) exception.

    ``api_base`` set: a server the user runs (advice: start it, fix the address). Unset: the
    provider's own host, where a failure to connect at all is the network's or the proxy's.
    """
    own = _own_error(err)
    if own is not None:
        return own
    name = type(err).__name__
    status = getattr(err, "status_code", None)
    where = f" at {api_base}" if api_base else ""
    if name == "ContextWindowExceededError" or "context window" in str(err).lower():
        return ContextWindowError(
            f"{role}={alias}: prompt exceeds the model's context window ({_short(err)}); "
            "lower chunk or the summary budget"
        )
    if _is_transport_failure(err):
        why = None if api_base else _connect_failure(err)
        if why:
            return _provider_unreachable(role, alias, model, why)
        return ModelUnreachableError(
            f"{role}={alias}: cannot reach the model{where} ({_short(err)}); "
            f"start the server or fix {setting(role, 'api_base')}"
        )
    if status == 429 or name == "RateLimitError":
        return RateLimitedError(
            f"{role}={alias}: rate limited ({_short(err)}); "
            f"set {setting(role, 'rpm')} (and {setting(role, 'tpm')}) to the provider's limits, "
            f"which a sweep's jobs then share, lower {setting(role, 'concurrency')}, or retry "
            "later",
            retry_after=_retry_after(err),
        )
    if status in (401, 403) or name in ("AuthenticationError", "PermissionDeniedError"):
        return AuthError(
            f"{role}={alias}: the API key was rejected ({_short(err)}); "
            "check the key in the environment"
        )
    if status == 404 or name == "NotFoundError":
        return LLMError(
            f"{role}={alias}: model not found{where} ({_short(err)}); check {role}.model"
        )
    if isinstance(status, int) and status >= 500:
        return TransientLLMError(f"{role}={alias}: server error {status}{where} ({_short(err)})")
    if name in ("ServiceUnavailableError", "InternalServerError", "BadGatewayError"):
        return TransientLLMError(f"{role}={alias}: server error{where} ({_short(err)})")
    return LLMError(
        f"{role}={alias}: request failed ({name}: {_short(err)}); check {role} settings"
    )


ANSWERED = ("stop", "eos", "end_turn")
"""Finish reasons of an answer the model meant to end there. Other reasons ('length',
'content_filter', 'tool_calls') are the model's own outcome, deterministic for the
request: retrying would pay again for the same answer, so they are left to the caller."""


def check_answer(response: Any, json_mode: bool, role: str, alias: str) -> None:
    """Raise ``InvalidAnswerError`` for an answer a provider glitch produced, not the model.

    An empty answer, or (when the request asked for a JSON object) an object or list
    opened and never closed, that nonetheless says it ended normally. Prose around JSON,
    Python-style dicts and other imperfect but complete answers pass: the metric's
    tolerant parser and its re-asks deal with those.
    """
    choice = response.choices[0]
    finish = str(choice.finish_reason or "stop")
    if finish not in ANSWERED:
        return
    text = getattr(choice.message, "content", None) or ""
    if not text.strip():
        raise InvalidAnswerError(
            f"{role}={alias}: empty answer (finish_reason={finish}); a provider fault"
        )
    if json_mode and cut_off_json(text):
        raise InvalidAnswerError(
            f"{role}={alias}: JSON answer cut off after {len(text)} characters "
            f"(finish_reason={finish}), ending {' '.join(text[-60:].split())!r}; a provider fault"
        )


def cut_off_json(text: str) -> bool:
    """True when ``text`` starts a JSON object or list that never closes."""
    body = re.sub(r"^```(?:json)?|```$", "", text.strip()).strip()
    if not body.startswith(("{", "[")):
        return False
    try:
        json.loads(body)
        return False
    except json.JSONDecodeError:
        pass
    depth, in_string, escaped = 0, False, False
    for ch in body:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return False
    return True
