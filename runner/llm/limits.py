"""Concurrency limits per model endpoint, owned by a job.

A limit belongs to an endpoint (the model string plus its server), as httpx keeps
``Limits`` per client: two roles on one endpoint share it, and a sweep that runs
``model.concurrency=2,8`` in one process gives each job its own limit. Nothing here is
process-global; a job builds one ``EndpointLimits`` from the specs of its roles. The
provider's rate limits (``model.rpm`` ...) are per endpoint too, but shared beyond the job by
the sweep's jobs: ``rate`` hands out their limiter (``runner/llm/rate.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from runner.llm.buckets import Allowance
from runner.llm.rate import RateLimiter, new_limiter
from runner.llm.spec import ModelSpec


def endpoint_limit(spec: ModelSpec) -> int:
    """Calls in flight for one spec: its setting, or 1 for the embedded model (one context)."""
    return 1 if spec.is_local else max(1, int(spec.concurrency))


class EndpointLimits:
    """One semaphore per endpoint; roles that share an endpoint get the smaller limit."""

    def __init__(self, specs: Iterable[ModelSpec] = ()) -> None:
        """Limits for the endpoints of ``specs``; others get theirs when first asked for."""
        self._limits: dict[tuple[str, str], int] = {}
        self._allowances: dict[tuple[str, str], Allowance] = {}
        self._rates: dict[tuple[str, str], RateLimiter | None] = {}
        for spec in specs:
            key = spec.endpoint
            self._allowances[key] = Allowance.of(spec).merged(
                self._allowances.get(key, Allowance.of(spec))
            )
            self._limits[key] = min(
                self._limits.get(key, endpoint_limit(spec)), endpoint_limit(spec)
            )
        self._semaphores = {k: threading.BoundedSemaphore(n) for k, n in self._limits.items()}
        self._lock = threading.Lock()

    def limit(self, spec: ModelSpec) -> int:
        """The number of calls allowed in flight to this spec's endpoint."""
        self.semaphore(spec)
        return self._limits[spec.endpoint]

    def semaphore(self, spec: ModelSpec) -> threading.BoundedSemaphore:
        """The endpoint's semaphore (created on demand for a spec the job did not list)."""
        with self._lock:
            if spec.endpoint not in self._semaphores:
                self._limits[spec.endpoint] = endpoint_limit(spec)
                self._semaphores[spec.endpoint] = threading.BoundedSemaphore(endpoint_limit(spec))
            return self._semaphores[spec.endpoint]

    def rate(self, spec: ModelSpec, shared_dir: Path | None) -> RateLimiter | None:
        """The endpoint's provider limits (None when it sets none), shared by the sweep's jobs.

        ``shared_dir``: the sweep's folder (``Budget.shared_dir``), None for a single job.
        """
        with self._lock:
            key = spec.endpoint
            if key not in self._rates:
                allowance = self._allowances.get(key) or Allowance.of(spec)
                limited = any(allowance.per_second().values())
                self._rates[key] = new_limiter(key, allowance, shared_dir) if limited else None
            return self._rates[key]
