"""A job's batch collectors, one per endpoint: roles on the same model share their batches.

The job's gateways ask ``collector`` for their endpoint's ``BatchCollector``
(``collector.py``), made by the first role that batches on it; in a sweep each collector
pools its requests with the other jobs' (``pool.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from runner.api.errors import ConfigError
from runner.llm.batch.collector import BatchCollector, StatusHook
from runner.llm.batch.ledger import Ledger
from runner.llm.batch.pool import SweepPool
from runner.llm.budget import Budget
from runner.llm.cache import ResponseCache
from runner.llm.spec import ModelSpec


class Batches:
    """A job's collectors, one per endpoint: roles on the same model share its batches."""

    def __init__(
        self,
        cache: ResponseCache,
        cache_dir: str,
        cancel: threading.Event,
        budget: Budget | None = None,
    ) -> None:
        """Batches answered into ``cache`` (in ``cache_dir``, beside their ledger)."""
        self.cache = cache
        self.ledger = Ledger(cache_dir)
        try:  # before the run exists: a ledger it cannot write would lose the batches it pays for
            self.ledger.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"batch=true keeps its ledger in {self.ledger.folder}, which cannot be made "
                f"({err.strerror}); set cache.dir to a folder you can write"
            ) from err
        self.cancel = cancel
        self.budget = budget
        self.in_sweep = budget is not None and budget.shared_dir is not None
        """A sweep's job: its batches are pooled with the other jobs' (``pool.py``)."""
        self.collectors: dict[tuple[str, str], BatchCollector] = {}

    def collector(
        self, spec: ModelSpec, role: str, api_key: Callable[[], str | None]
    ) -> BatchCollector:
        """The collector of ``spec``'s endpoint (made by the first role that uses it)."""
        found = self.collectors.get(spec.endpoint)
        if found is None:
            from runner.llm.batch.providers import provider_for

            found = BatchCollector(
                spec,
                role,
                lambda: provider_for(spec, role, api_key()),
                self.ledger,
                self.cache,
                self.cancel,
                self.budget,
                pool=SweepPool(self.ledger, spec.endpoint) if self.in_sweep else None,
            )
            self.collectors[spec.endpoint] = found
        return found

    def on_status(self, hook: StatusHook) -> None:
        """Tell ``hook`` every collector's status line as it changes."""
        for collector in self.collectors.values():
            collector.on_status = hook

    def summary(self) -> dict[str, str]:
        """What the job's batches were, for the run's tags ('' values when none)."""
        submitted = [b for c in self.collectors.values() for b in c.submitted]
        joined = [b for c in self.collectors.values() for b in c.joined]
        return {
            "submitted": ",".join(submitted),
            "joined": ",".join(joined),
            "requests": str(sum(c.requests for c in self.collectors.values())),
        }
