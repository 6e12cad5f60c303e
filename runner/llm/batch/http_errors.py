"""What a batch API's HTTP status means, as the ``runner.api.errors`` class and its one line.

Both adapters (``anthropic.py``, ``openai.py``) meet the same statuses: a rejected key, a rate
limit, a server error, and anything else the request got wrong. Each adds its own cases first
(a 404 meaning no batch endpoints, Anthropic's 413) and names its API and its queue limits.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.api.errors import AuthError, LLMError, RateLimitedError, TransientLLMError


@dataclass(frozen=True)
class Failed:
    """One failed call to a batch API, as the messages name it."""

    who: str
    """'judge=claude'."""
    role: str
    """'judge' (for the keys the user may fix)."""
    doing: str
    """'creating the batch', 'looking at batch ...'."""
    where: str
    """' at <api_base>' or ''."""
    why: str
    """The server's message, one line, the key scrubbed from it."""


def status_error(
    failed: Failed,
    status: int,
    *,
    api: str,
    key_env: str,
    queue_limits: str,
    retry_after: float | None,
) -> LLMError:
    """The error of an HTTP ``status`` the adapter has no case of its own for."""
    f = failed
    if status in (401, 403):
        return AuthError(
            f"{f.who}: {api}{f.where} rejected the key while {f.doing} (HTTP {status}: "
            f"{f.why}); check {key_env} in the environment"
        )
    if status == 429:
        return RateLimitedError(
            f"{f.who}: rate limited while {f.doing}{f.where} ({f.why}); {queue_limits}: wait "
            "for batches in flight to end (python -m runner.batches lists them), then run the "
            "same command again",
            retry_after=retry_after,
        )
    if status >= 500:
        return TransientLLMError(
            f"{f.who}: server error {status} while {f.doing}{f.where} ({f.why})"
        )
    return LLMError(
        f"{f.who}: {f.doing} failed{f.where} (HTTP {status}: {f.why}); check {f.role}.model "
        f"and {f.role}.api_base"
    )


def one_line(value: object) -> str:
    """``value`` as one line of at most 300 characters (a server's message, an error)."""
    return " ".join(str(value).split())[:300]
