from __future__ import annotations

import random

import pytest

from runner.api.errors import (
    AuthError,
    LLMError,
    ModelUnreachableError,
    RateLimitedError,
    TransientLLMError,
)
from runner.llm.retry import RetryPolicy


class Flaky:
    """Raises the given errors in turn, then returns 'ok'."""

    def __init__(self, *errors: LLMError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_transient_errors_are_retried_until_success() -> None:
    waits: list[float] = []
    fn = Flaky(TransientLLMError("500"), ModelUnreachableError("refused"))
    result, attempts = RetryPolicy(max_attempts=5).run(fn, sleep=waits.append, rng=random.Random(0))
    assert (result, attempts, fn.calls) == ("ok", 3, 3)
    assert len(waits) == 2


def test_non_retryable_error_fails_at_once() -> None:
    fn = Flaky(AuthError("401"))
    with pytest.raises(AuthError):
        RetryPolicy(max_attempts=5).run(fn, sleep=lambda s: None)
    assert fn.calls == 1


def test_gives_up_after_max_attempts() -> None:
    fn = Flaky(*[TransientLLMError("503") for _ in range(10)])
    with pytest.raises(TransientLLMError):
        RetryPolicy(max_attempts=4).run(fn, sleep=lambda s: None)
    assert fn.calls == 4


def test_retry_after_is_honoured() -> None:
    waits: list[float] = []
    fn = Flaky(RateLimitedError("429", retry_after=7.0))
    RetryPolicy(base_delay_s=0.01, max_delay_s=60).run(fn, sleep=waits.append)
    assert waits == [7.0]


def test_retry_after_is_capped() -> None:
    waits: list[float] = []
    fn = Flaky(RateLimitedError("429", retry_after=3600.0))
    RetryPolicy(max_delay_s=20).run(fn, sleep=waits.append)
    assert waits == [20]


def test_backoff_grows_exponentially_with_jitter_under_the_cap() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0)
    rng = random.Random(1)
    err = TransientLLMError("x")
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)]:
        samples = [policy.delay(attempt, err, rng) for _ in range(200)]
        assert all(0 <= s <= ceiling for s in samples)
        assert max(samples) > ceiling * 0.8  # full jitter reaches near the ceiling
        assert len(set(samples)) > 100  # and is spread, not constant
