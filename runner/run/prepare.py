"""Everything a job needs, built and checked before its MLflow run exists.

On top of the preflight's checks (``runner/run/preflight.py``: keys named in the config,
servers answering, chunk against a window known without litellm, documents read), whose
findings it takes as they are: roles become gateways (a key only litellm can name, the
chunk against a window only litellm knows), metrics are set up (prompts parsed, parameters
checked) and the fingerprint computed. A mistake in any of them ends the job with one line
and leaves no run behind for a report to count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from runner.api.metric import Metric
from runner.api.types import WorkItem
from runner.config.chunk_window import check_chunk
from runner.config.fingerprint import fingerprint
from runner.config.panel import JUDGE, member_role
from runner.config.run_config import RunConfig
from runner.llm.batch import Batches
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.limits import EndpointLimits
from runner.llm.local import perf as local_perf
from runner.llm.stop import Stop
from runner.run import plugin_calls
from runner.run.preflight import Checked

BATCH_DOCUMENTS = 1024
"""Documents a job with a batched role works on at once; beyond, each 1,024 make a batch."""


@dataclass(frozen=True)
class Replica:
    """A metric set up once more: for a panel member's judge and one sample slot of it."""

    judge: str
    """The panel member's alias ('' for the one judge)."""
    slot: int
    """The sample (0 to ``judge.samples`` - 1)."""
    metric: Metric


@dataclass(frozen=True)
class Job:
    """A validated job, ready to run."""

    config: RunConfig
    """The validated config."""
    strategy: ModuleType
    """The strategy's module (``summarize``, ``ROLES``)."""
    roles: dict[str, Gateway]
    """One gateway per role the strategy and metrics declared."""
    metrics: dict[str, Metric]
    """Metric name -> the metric, set up once."""
    items: list[WorkItem]
    """The documents (or summaries) to process."""
    prompts: dict[str, Path]
    """Artifact path -> prompt file this job can read."""
    fingerprint: str
    """The experiment's identity (``runner/config/fingerprint.py``)."""
    cancel: Stop
    """Set when the job stops: every gateway refuses new calls."""
    replicas: dict[str, tuple[Replica, ...]] = field(default_factory=dict)
    """Metric name -> its further instances: one per further sample of the judge
    (``judge.samples=K``) and per panel member (``judges=``) and each of its samples; none
    for a metric without a judge or a judge asked once."""

    def role(self, role: str) -> Gateway:
        """The gateway of ``role`` as a metric names it.

        With a panel, ``judge`` is the first member's: the one whose verdicts and artifacts
        the run keeps.
        """
        if role == JUDGE and self.config.panel:
            return self.roles[member_role(self.config.panel[0])]
        return self.roles[role]

    @property
    def workers(self) -> int:
        """Documents worth processing at once: the widest role's limit, at most one per document.

        With a batched role, every document at once (up to ``BATCH_DOCUMENTS``): their threads
        only wait, and a document left for later would wait for a batch round of its own.
        """
        if any(g.batch for g in self.roles.values()):
            return max(1, min(len(self.items), BATCH_DOCUMENTS))
        widest = max((g.concurrency for g in self.roles.values()), default=1)
        return max(1, min(len(self.items), widest))


def prepare(config: RunConfig, calls: CallLog, cancel: Stop, checked: Checked) -> Job:
    """Build and check what the preflight could not; raises a ``RunnerError`` naming the fix.

    ``checked``: what ``runner.run.preflight.check`` returned for this config.
    """
    local_perf.reset()  # this job's share of the embedded model's time
    roles = build_roles(config, calls, cancel)
    model = roles.get("model")
    if model is not None and checked.window is None:  # the window came from litellm
        check_chunk(config.chunk, model.context_window, model.name)
    judging = _judges(config, roles)  # the panel's first member stands for the judge
    metrics = {
        name: _set_up(name, config.metric_module(name), {**roles, **judging}, params)
        for name, params in config.metrics.items()
    }
    return Job(
        config,
        config.strategy_module,
        roles,
        metrics,
        checked.items,
        checked.prompts,
        fingerprint(config, checked.prompts),
        cancel,
        _replicas(config, roles),
    )


def _judges(config: RunConfig, roles: dict[str, Gateway]) -> dict[str, Gateway]:
    """``{"judge": ...}``: the first panel member's gateway with a panel, else nothing."""
    if not config.panel:
        return {}
    return {JUDGE: roles[member_role(config.panel[0])]}


def judge_gateways(config: RunConfig, roles: dict[str, Gateway]) -> dict[str, Gateway]:
    """Alias ('' for the one judge) -> its gateway: each panel member's, or the judge's."""
    if config.panel:
        return {name: roles[member_role(name)] for name in config.panel}
    return {"": roles[JUDGE]} if JUDGE in roles else {}


def _replicas(config: RunConfig, roles: dict[str, Gateway]) -> dict[str, tuple[Replica, ...]]:
    """Each judged metric set up once more per (judge, sample) after the first's sample 0."""
    judges = judge_gateways(config, roles)
    pairs = [
        (name, slot) for name, gateway in judges.items() for slot in range(gateway.spec.samples)
    ][1:]
    if not pairs:
        return {}
    out = {}
    for label, params in config.metrics.items():
        module = config.metric_module(label)
        if JUDGE not in module.ROLES:
            continue
        out[label] = tuple(
            Replica(
                name,
                slot,
                _set_up(label, module, {**roles, JUDGE: judges[name].sampled(slot)}, params),
            )
            for name, slot in pairs
        )
    return out


def build_roles(config: RunConfig, calls: CallLog, cancel: Stop) -> dict[str, Gateway]:
    """One gateway per role, sharing the call log, the cache and per-endpoint limits.

    Each is checked for what needs litellm (``Gateway.check_ready``).
    """
    cache = ResponseCache(config.cache_dir) if config.cache_dir else None
    limits = EndpointLimits(config.roles.values())
    batches = (
        Batches(cache, config.cache_dir, cancel, calls.budget)
        if cache is not None and config.cache_dir and any(s.batch for s in config.roles.values())
        else None
    )
    roles = {
        role: Gateway(
            spec,
            calls,
            cache,
            config.call_seed,
            config.temperature_of(role),
            role=role,
            limits=limits,
            cancel=cancel,
            repeat=config.repeat,
            batches=batches,
        )
        for role, spec in config.roles.items()
    }
    for gateway in roles.values():
        gateway.check_ready()
    return roles


def _set_up(
    label: str, module: ModuleType, roles: dict[str, Any], params: dict[str, Any]
) -> Metric:
    """The metric of one ``metrics.<label>`` block, given the roles it declares (checked)."""
    return plugin_calls.set_up(label, module, {r: roles[r] for r in module.ROLES}, params)
