"""When and how long to wait before retrying a failed model call.

Kept apart from the gateway so the policy can be tested without a network: the gateway
translates provider errors into ``runner.errors`` types, and this module decides on those.
Exponential backoff with full jitter (AWS architecture blog's recommendation), capped, and
a server's ``Retry-After`` wins when it asks for longer.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from runner.errors import LLMError, RateLimitedError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter."""

    max_attempts: int = 6
    """Total attempts, the first included."""
    base_delay_s: float = 1.0
    """Delay ceiling before the second attempt; doubles each time."""
    max_delay_s: float = 60.0
    """Upper bound of any single wait (Retry-After included)."""

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
    ) -> tuple[T, int]:
        """Call ``attempt_fn`` until it succeeds or fails for good; returns (result, attempts)."""
        rng = rng or random.Random()
        for attempt in range(1, self.max_attempts + 1):
            try:
                return attempt_fn(), attempt
            except LLMError as error:
                if not error.retryable or attempt == self.max_attempts:
                    raise
                sleep(self.delay(attempt, error, rng))
        raise AssertionError("unreachable: the loop returns or raises")
