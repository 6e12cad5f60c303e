"""An endpoint's rate-limit buckets, and a sweep's spending, in Ray actors, for a Ray sweep.

Under ``hydra/launcher=ray`` a sweep's jobs may run on several machines, where a file lock
shares nothing. Each job that runs on a Ray worker (Ray imported and initialized in its
process) finds the endpoint's actor by name, creating it if it is the first: one actor per
sweep (named from the sweep's folder) and endpoint, holding ``runner.llm.rate.Buckets`` with
the actor's own clock, so the machines' clocks need not agree. The actor belongs to the job
that created it; should that worker go, the next call creates it again (full buckets).

The sweep's spending (``budget.sweep_usd``) is one more actor per sweep, ``SpendKeeper``:
the total every job adds its calls' cost to, whatever machine it runs on (a file ledger on
one machine's disk would let each machine spend the budget again). It is detached, so it
outlives the job that created it: a lost worker loses no spending, and a resumed sweep finds
its total as it finds its ``spend.json`` on one machine. It ends with the cluster.

Ray is imported only here and only when the process already has it: a job that does not
run on Ray never pays for it.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from runner.llm.buckets import Allowance, Buckets
from runner.on_ray import running_ray

NAMESPACE = "summarization-runner"
"""The Ray namespace of the rate-limit actors."""


class BucketKeeper:
    """The actor's body: one endpoint's buckets, at the actor's time."""

    def __init__(self, allowance: Allowance) -> None:
        """Full buckets now."""
        self.buckets = Buckets(allowance, None, time.time())

    def reserve(self, costs: dict[str, float]) -> tuple[float, float]:
        """``Buckets.reserve`` now."""
        return self.buckets.reserve(costs, time.time())

    def settle(self, deltas: dict[str, float]) -> None:
        """``Buckets.settle`` now."""
        self.buckets.settle(deltas, time.time())

    def pause(self, seconds: float) -> None:
        """``Buckets.pause`` now."""
        self.buckets.pause(seconds, time.time())

    def check(self) -> tuple[float, float]:
        """``Buckets.check`` now."""
        return self.buckets.check(time.time())


class RayStore:
    """A ``runner.llm.rate.Store`` whose buckets are a named Ray actor."""

    def __init__(self, ray: Any, name: str, allowance: Allowance) -> None:
        """The actor ``name``, found or created."""
        self._ray = ray
        self.name = name
        self._allowance = allowance
        self._actor = self._find()

    def _find(self) -> Any:
        remote = self._ray.remote(num_cpus=0)(BucketKeeper)
        options = {"name": self.name, "namespace": NAMESPACE, "get_if_exists": True}
        return remote.options(**options).remote(self._allowance)

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return self._ray.get(getattr(self._actor, method).remote(*args))
        except self._ray.exceptions.RayActorError:  # its owner's worker went: start it again
            self._actor = self._find()
            return self._ray.get(getattr(self._actor, method).remote(*args))

    def reserve(self, costs: dict[str, float]) -> tuple[float, float]:
        """See ``runner.llm.rate.Store``."""
        wait, shifted = self._call("reserve", costs)
        return float(wait), float(shifted)

    def settle(self, deltas: dict[str, float]) -> None:
        """See ``runner.llm.rate.Store``."""
        self._call("settle", deltas)

    def pause(self, seconds: float) -> None:
        """See ``runner.llm.rate.Store``."""
        self._call("pause", seconds)

    def check(self) -> tuple[float, float]:
        """See ``runner.llm.rate.Store``."""
        left, shifted = self._call("check")
        return float(left), float(shifted)


def actor_name(sweep: str, endpoint: tuple[str, str]) -> str:
    """The actor of one sweep's endpoint."""
    return _named("runner-rate", sweep, *endpoint)


def _named(prefix: str, *parts: str) -> str:
    """An actor name from what it belongs to (a sweep's folder, an endpoint), hashed short."""
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"


def ray_store(sweep: str, endpoint: tuple[str, str], allowance: Allowance) -> RayStore | None:
    """The endpoint's actor when this job runs on Ray, else None."""
    ray = running_ray()
    return None if ray is None else RayStore(ray, actor_name(sweep, endpoint), allowance)


class SpendKeeper:
    """The spending actor's body: one sweep's total in USD."""

    def __init__(self) -> None:
        """Nothing spent yet."""
        self.usd = 0.0

    def add(self, usd: float) -> float:
        """The total after adding ``usd`` (0: just read it)."""
        self.usd += usd
        return self.usd


class RaySpend:
    """A sweep's spending total in a named, detached Ray actor (``runner.llm.budget``)."""

    def __init__(self, ray: Any, name: str) -> None:
        """The actor ``name``, found or created."""
        self._ray = ray
        self.name = name
        remote = ray.remote(num_cpus=0)(SpendKeeper)
        options = {
            "name": name,
            "namespace": NAMESPACE,
            "get_if_exists": True,
            "lifetime": "detached",
        }
        self._actor = remote.options(**options).remote()

    def add(self, usd: float) -> float:
        """The sweep's total after adding ``usd``."""
        return float(self._ray.get(self._actor.add.remote(usd)))


def spend_name(sweep: str) -> str:
    """The spending actor of one sweep (named from its folder, as the rate actors are)."""
    return _named("runner-spend", sweep)


def ray_spend(sweep: str) -> RaySpend | None:
    """The sweep's spending actor when this job runs on Ray, else None."""
    ray = running_ray()
    return None if ray is None else RaySpend(ray, spend_name(sweep))
