"""Provider rate limits (``model.rpm``, ``tpm``, ``input_tpm``, ``output_tpm``) per endpoint.

A provider's allowance belongs to the account, not to a job: the jobs of a sweep spend the
same requests and tokens per minute. So the buckets live where every job of the sweep finds
them: a small JSON file beside the sweep's spending ledger, read and written under an
exclusive ``flock`` (jobs on one machine: the basic or joblib launcher), or a Ray actor per
endpoint when the job runs on a Ray worker (``runner/llm/rate_ray.py``). A single job keeps
them in memory.

The arithmetic is a token bucket per limit, holding one second's worth (``BURST_S``) and
refilled so that no 60 s ever holds more than the allowance (``runner.llm.buckets.refill``:
the allowance less the bucket's capacity per minute, since a full bucket adds its capacity
to a minute's refill): a request that finds too little waits for the refill, and
takes its share at once, so later requests queue behind it (a reservation, as in GCRA: one
lock per request, no polling). A bucket may go below zero: a request larger than the burst
still goes once the bucket is full, and the debt delays the next. Each attempt takes one
request and its prompt tokens, counted before it is sent; its completion tokens (and the
prompt's actual count) are charged when it answers. A 429 empties the buckets and pauses
the endpoint until its Retry-After has passed, for every job at once: each waits on the
shared pause instead of learning the limit from a 429 of its own.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from runner.api.text import count_tokens
from runner.llm.buckets import Allowance, Buckets

PAUSE_WITHOUT_RETRY_AFTER_S = 1.0
"""The shared pause after a 429 that names no Retry-After."""


class Store(Protocol):
    """Where an endpoint's buckets live: this process, a file, or a Ray actor."""

    def reserve(self, costs: dict[str, float]) -> tuple[float, float]:
        """``Buckets.reserve`` at the store's time."""

    def settle(self, deltas: dict[str, float]) -> None:
        """``Buckets.settle`` at the store's time."""

    def pause(self, seconds: float) -> None:
        """``Buckets.pause`` at the store's time."""

    def check(self) -> tuple[float, float]:
        """``Buckets.check`` at the store's time."""


class MemoryStore:
    """The buckets of a single job, shared by its threads."""

    def __init__(self, allowance: Allowance, clock: Callable[[], float] = time.monotonic) -> None:
        """Full buckets now."""
        self._clock = clock
        self._buckets = Buckets(allowance, None, clock())
        self._lock = threading.Lock()

    def reserve(self, costs: dict[str, float]) -> tuple[float, float]:
        """See ``Store``."""
        with self._lock:
            return self._buckets.reserve(costs, self._clock())

    def settle(self, deltas: dict[str, float]) -> None:
        """See ``Store``."""
        with self._lock:
            self._buckets.settle(deltas, self._clock())

    def pause(self, seconds: float) -> None:
        """See ``Store``."""
        with self._lock:
            self._buckets.pause(seconds, self._clock())

    def check(self) -> tuple[float, float]:
        """See ``Store``."""
        with self._lock:
            return self._buckets.check(self._clock())


class FileStore:
    """The buckets of a sweep's jobs on one machine, in a JSON file under ``flock``.

    Wall-clock time, which every process on the machine shares; a lock per operation (the
    file is a few hundred bytes, never synced to disk: it only paces the calls).
    """

    def __init__(
        self, path: Path, allowance: Allowance, clock: Callable[[], float] = time.time
    ) -> None:
        """Buckets in ``path`` (created full by the first job that asks)."""
        self.path = path
        self.allowance = allowance
        self._clock = clock
        path.parent.mkdir(parents=True, exist_ok=True)

    def _update(self, change: Callable[[Buckets, float], Any]) -> Any:
        # One descriptor per operation, so that flock also keeps this process's threads apart;
        # the state is rewritten in place, padded with spaces (cheaper than a truncate).
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            old = os.pread(fd, 1 << 16, 0)
            now = self._clock()
            text = old.strip()
            buckets = Buckets(self.allowance, json.loads(text) if text else None, now)
            result = change(buckets, now)
            os.pwrite(fd, json.dumps(buckets.state()).encode().ljust(max(512, len(old))), 0)
            return result
        finally:
            os.close(fd)  # closing releases the lock

    def reserve(self, costs: dict[str, float]) -> tuple[float, float]:
        """See ``Store``."""
        wait, shifted = self._update(lambda b, now: b.reserve(costs, now))
        return float(wait), float(shifted)

    def settle(self, deltas: dict[str, float]) -> None:
        """See ``Store``."""
        self._update(lambda b, now: b.settle(deltas, now))

    def pause(self, seconds: float) -> None:
        """See ``Store``."""
        self._update(lambda b, now: b.pause(seconds, now))

    def check(self) -> tuple[float, float]:
        """See ``Store``."""
        left, shifted = self._update(lambda b, now: b.check(now))
        return float(left), float(shifted)


class RateLimiter:
    """The pace of one endpoint for one job's gateways, whichever store holds its buckets."""

    def __init__(
        self,
        allowance: Allowance,
        store: Store,
        sleep: Callable[[float], object] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Requests wait with ``sleep`` unless the job's cancel event is given to ``acquire``."""
        self.allowance = allowance
        self.store = store
        self._sleep = sleep
        self._clock = clock

    def estimate(self, messages: list[dict[str, Any]]) -> int:
        """The prompt's tokens in the project's tokenizer (0 when no token limit is set)."""
        if not self.allowance.counts_tokens:
            return 0
        return sum(count_tokens(_text(m.get("content"))) for m in messages)

    def acquire(self, prompt_tokens: int, cancel: threading.Event | None = None) -> None:
        """Wait until this endpoint may be sent one more request of ``prompt_tokens``.

        A pause that a 429 (of any job) started meanwhile pushes the time back by as much.
        Returns early when ``cancel`` is set (the caller checks it before sending).
        """
        costs = {"rpm": 1.0, "tpm": float(prompt_tokens), "input_tpm": float(prompt_tokens)}
        wait, shifted = self.store.reserve(costs)
        if wait <= 0:
            return
        due = self._clock() + wait
        while True:
            left = due - self._clock()
            if left > 0 and (cancel.wait(left) if cancel is not None else self._sleep(left)):
                return
            paused, now_shifted = self.store.check()
            due = max(due + now_shifted - shifted, self._clock() + paused)
            shifted = now_shifted
            if due <= self._clock():
                return

    def settle(self, estimated: int, prompt_tokens: int, completion_tokens: int) -> None:
        """Charge an answered request's actual usage against what ``acquire`` took."""
        extra = prompt_tokens - estimated if self.allowance.counts_tokens else 0
        deltas = {
            "tpm": extra + completion_tokens,
            "input_tpm": extra,
            "output_tpm": completion_tokens,
        }
        if any(deltas.values()):
            self.store.settle({k: float(v) for k, v in deltas.items()})

    def rejected(self, retry_after: float | None) -> None:
        """A 429: every job of the sweep holds its requests until Retry-After has passed."""
        self.store.pause(PAUSE_WITHOUT_RETRY_AFTER_S if retry_after is None else retry_after)


def _text(content: Any) -> str:
    """A message's text, whether a string or Anthropic-style content blocks."""
    if isinstance(content, list):
        return " ".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return str(content or "")


def endpoint_file(folder: Path, endpoint: tuple[str, str]) -> Path:
    """The buckets' file of one endpoint in a sweep's folder."""
    digest = hashlib.sha256("\n".join(endpoint).encode()).hexdigest()[:16]
    return folder / f"rate-{digest}.json"


def new_limiter(
    endpoint: tuple[str, str], allowance: Allowance, folder: Path | None
) -> RateLimiter:
    """The limiter of one endpoint: a Ray actor on a Ray worker, the sweep's file, or memory."""
    from runner.llm.rate_ray import ray_store

    store: Store
    if folder is None:
        store = MemoryStore(allowance)
    else:
        store = ray_store(str(folder), endpoint, allowance) or FileStore(
            endpoint_file(folder, endpoint), allowance
        )
    return RateLimiter(allowance, store)
