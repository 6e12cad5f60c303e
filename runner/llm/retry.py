"""When and how long to wait before retrying a failed model call.

Kept apart from the gateway so the policy can be tested without a network: the gateway
translates provider errors into ``runner.api.errors`` types, and this module decides on those.
Exponential backoff with full jitter (AWS architecture blog's recommendation), capped, and
a server's ``Retry-After`` wins when it asks for longer. A total deadline bounds the time
spent retrying one call, so a provider that keeps failing ends the document with its cause
instead of holding the job for ``max_attempts`` x ``timeout_s``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from runner.api.errors import LLMError, RateLimitedError
from runner.ranges import Range, valid

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter."""

    max_attempts: int = field(default=6, metadata=valid(Range(1, example=6)))
    """Total attempts, the first included."""
    base_delay_s: float = field(default=1.0, metadata=valid(Range(0, example=1)))
    """Delay ceiling before the second attempt; doubles each time."""
    max_delay_s: float = field(default=60.0, metadata=valid(Range(0, example=60)))
    """Upper bound of any single wait (Retry-After included)."""
    deadline_s: float | None = field(
        default=600.0, metadata=valid(Range(0, example=600, above=True, null="no limit"))
    )
    """No wait and no new attempt past this many seconds after the first attempt began
    (null = no limit). An attempt in flight is never cut short: ``timeout_s`` bounds it, so a
    call ends within about ``deadline_s + timeout_s``."""

    def delay(self, attempt: int, error: LLMError, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        wait = rng.uniform(0, ceiling)
        if isinstance(error, RateLimitedError) and error.retry_after is not None:
            wait = max(wait, min(error.retry_after, self.max_delay_s))
        return wait

    def run(
        self,
        attempt_fn: Callable[[], T],
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> tuple[T, int]:
        """Call ``attempt_fn`` until it succeeds or fails for good; returns (result, attempts).

        The error that ends the retries is the last one, its message extended with how
        many attempts were made and whether the deadline stopped them.
        """
        rng = rng or random.Random()
        start = clock()
        for attempt in range(1, self.max_attempts + 1):
            try:
                return attempt_fn(), attempt
            except LLMError as error:
                if not error.retryable:
                    raise
                if attempt == self.max_attempts:
                    raise _gave_up(error, attempt, clock() - start, "") from error.__cause__
                wait = self.delay(attempt, error, rng)
                spent = clock() - start
                if self.deadline_s is not None and spent + wait > self.deadline_s:
                    why = f"retry.deadline_s={self.deadline_s:g} would pass during the next wait"
                    raise _gave_up(error, attempt, spent, why) from error.__cause__
                sleep(wait)
        raise AssertionError("unreachable: the loop returns or raises")


def _gave_up(error: LLMError, attempts: int, spent: float, why: str) -> LLMError:
    """The last error, its message saying the retries are spent (the run shows this line)."""
    if attempts > 1 or why:
        note = f"gave up after {attempts} attempt{'s' * (attempts > 1)} in {spent:.1f} s"
        error.args = (f"{error}; {note}" + (f": {why}" if why else ""),)
    return error
