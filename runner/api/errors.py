"""Typed errors that carry their fix.

Every error the user can cause ends the run with one line naming the problem and the
remedy, so the hierarchy is shallow and each message is written for a researcher:

    RunnerError
    ├── ConfigError          a key or value in the composed config is wrong
    ├── DataError            an input document or file cannot be used
    ├── LLMError             a model call failed for good
    │   ├── ContextWindowError   the prompt cannot fit the model's window
    │   ├── RateLimitedError     429 after every retry (carries retry_after)
    │   ├── AuthError            missing or rejected API key
    │   ├── ProviderUnreachableError  a provider's own host: no network, DNS or proxy (not retried)
    │   ├── ModelUnreachableError server could not be reached / timed out
    │   └── TransientLLMError    5xx and friends; retried by the gateway
    │       └── InvalidAnswerError   200 with an empty answer or cut-off JSON
    ├── MetricError          a metric could not be computed at all
    ├── PluginFailure        a strategy's or metric's code raised while the job ran it
    │   └── PluginContractBreach  it returned what its contract forbids
    └── Cancelled            the job stopped (another document failed, or Ctrl-C)

litellm's exceptions are translated once, in the gateway, with ``raise ... from err``.
"""

from __future__ import annotations


class RunnerError(Exception):
    """Base class: the message is shown to the user as one line."""


class ConfigError(RunnerError):
    """A config key or value is invalid; the message names the key and a valid choice."""


class DataError(RunnerError):
    """An input document cannot be used; the message names the file or document."""


class LLMError(RunnerError):
    """A model call failed and will not be retried any further."""

    retryable: bool = False


class ContextWindowError(LLMError):
    """The request cannot fit the model's context window."""


class AuthError(LLMError):
    """The API key is missing or was rejected."""


class ProviderUnreachableError(LLMError):
    """A provider's own API host (no ``api_base``) could not be resolved or connected to.

    Not retried: a DNS failure or a refused connection to api.anthropic.com does not heal in
    the seconds a retry waits, and six retries only hide the cause for half a minute.
    """


class TransientLLMError(LLMError):
    """A failure worth retrying: 5xx, timeout, dropped connection."""

    retryable = True


class InvalidAnswerError(TransientLLMError):
    """HTTP 200, but the answer is empty or JSON cut off mid-object: a provider glitch.

    Retried like a 5xx (same request; never cached nor logged as a completed call), so a
    run with such faults gives the answers of a run without them.
    """


class ModelUnreachableError(TransientLLMError):
    """The server could not be reached or did not answer in time."""


class RateLimitedError(TransientLLMError):
    """HTTP 429; ``retry_after`` is the server's hint in seconds, when it gave one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        """The error's ``message``, and the server's ``Retry-After`` in seconds if it sent one."""
        super().__init__(message)
        self.retry_after = retry_after


class MetricError(RunnerError):
    """A metric could not be computed at all (as opposed to NaN for one document)."""


class PluginFailure(RunnerError):
    """A strategy's or metric's own code raised while the job ran it.

    The message names the plugin, the file and line where it raised, and the exception; the
    exception itself is the ``__cause__`` (its traceback is kept as the run's ``error.txt``).
    """


class PluginContractBreach(PluginFailure):
    """A strategy or metric returned what its contract forbids.

    A ``str`` for a result, a word for a number, a headline value it never gives. Every
    document would break it the same way, so it stops the job even with ``on_error=continue``.
    """


class Cancelled(RunnerError):
    """The job stopped before this call: another document failed, or the user interrupted."""


class Terminated(BaseException):
    """SIGTERM arrived: like KeyboardInterrupt, not caught by ``except Exception``."""


class BudgetExceeded(RunnerError):
    """``budget.usd`` or ``budget.sweep_usd`` was reached; no further model call is made."""


class BatchError(RunnerError):
    """A provider batch could not be submitted, or did not end within ``<role>.batch_timeout``.

    It stops the job: every request the batch holds would fail the same way. The batches stay
    in the ledger, so the same command waits for them again (``runner/llm/batch/``).
    """
