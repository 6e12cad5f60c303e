"""Spending limits: ``budget.usd`` per job and ``budget.sweep_usd`` per sweep.

The gateway asks ``check()`` before every call that would reach a model (cache hits are
free) and the call log ``charge()``s what each real call cost. A sweep's jobs may run in
several processes, so their spending is added up in one small file (the sweep's ledger,
``<sweep dir>/spend.json``) under an exclusive ``flock``: read, add, write back. A limit
stops new calls only; calls already in flight finish, so a job can overshoot by at most
what its in-flight calls cost. On a Ray cluster the jobs of several machines add to one
named actor instead (``runner.llm.rate_ray.RaySpend``), so the limit holds across them.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from runner.api.errors import BudgetExceeded

if TYPE_CHECKING:
    from runner.llm.rate_ray import RaySpend


class Budget:
    """The limits of one job, and what it has spent so far."""

    def __init__(self, job_usd: float | None, sweep_usd: float | None, ledger: str | None) -> None:
        """Limits in USD (None: none); a sweep's spending is shared through the ``ledger`` file."""
        self.job_usd = job_usd
        self.sweep_usd = sweep_usd
        self.ledger = Path(ledger) if ledger and sweep_usd is not None else None
        self.shared_dir = Path(ledger).parent if ledger else None
        """The sweep's folder, where its jobs also share the endpoints' rate limits
        (``runner/llm/rate.py``); None for a single job."""
        self.spent = 0.0
        self._lock = threading.Lock()
        self._actor = _on_ray(self.ledger)
        """On a Ray worker, the sweep's spending actor replaces the ledger file: the jobs of
        other machines add to it too."""

    def check(self) -> None:
        """Raise ``BudgetExceeded`` when a limit has been reached."""
        if self.job_usd is not None and self.spent >= self.job_usd:
            raise BudgetExceeded(
                f"budget.usd={self.job_usd} reached (${self.spent:.4f} spent by this job); raise "
                "budget.usd and rerun: calls already made are served from the cache"
            )
        if self.sweep_usd is not None:
            total = self._sweep_total(0.0) if self.ledger else self.spent
            if total >= self.sweep_usd:
                raise BudgetExceeded(
                    f"budget.sweep_usd={self.sweep_usd} reached (${total:.4f} spent by the sweep); "
                    "raise it and rerun the sweep: finished cells are skipped"
                )

    def charge(self, cost_usd: float) -> None:
        """Add one real call's cost to the job and, in a sweep, to the sweep's ledger."""
        if cost_usd <= 0:
            return
        with self._lock:
            self.spent += cost_usd
        if self.ledger:
            self._sweep_total(cost_usd)

    def _sweep_total(self, add: float) -> float:
        """The sweep's spending after adding ``add``.

        The Ray actor's, else the ledger file's (read and written under its lock).
        """
        if self._actor is not None:
            return self._actor.add(add)
        assert self.ledger is not None
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        with open(self.ledger, "a+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                text = handle.read().strip()
                total = float(json.loads(text)["usd"]) if text else 0.0
                if add:
                    total += add
                    handle.seek(0)
                    handle.truncate()
                    handle.write(json.dumps({"usd": total}))
                    handle.flush()
                    os.fsync(handle.fileno())
                return total
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _on_ray(ledger: Path | None) -> RaySpend | None:
    """The sweep's spending actor when the job runs on Ray and the sweep has a budget."""
    if ledger is None:
        return None
    from runner.llm.rate_ray import ray_spend

    return ray_spend(str(ledger.parent))
