"""One cell's (one job's) estimate: calls, tokens, cost and wall time of its roles.

The documents are those the job would read; their strategy's and metrics' calls are what
each plugin's own ``estimate`` hook says (``runner.estimate.hooks``; without one its calls
are noted as unknown). Wall time: each document's
critical path at the roles' seconds per call, documents side by side up to the widest
role's concurrency, never under what the endpoint's concurrency and provider limits
(``model.rpm``, ``tpm``, ``input_tpm``, ``output_tpm``) let through.

A role with ``<role>.batch=true`` pays its batch price (``runner.llm.prices.batch_price_of``)
and its calls take no online latency: the job waits one batch round per step of that role
whose requests wait on an earlier step's answers (its phases in a document, documents side by
side), each round about an hour typically and 24 h at most (``BATCH_WAIT``). Beside what the
job pays, each cell carries its cost with every call online and with every role that can
batch in batches, so the table shows what batch mode saves.

Every figure that is not exact is taken through the cell's ``Scenario`` (``guide.py``), so
``ranges.py`` can make the same cell again at its guesses' bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.api.estimating import Phase
from runner.api.types import WorkItem
from runner.config.batching import batch_roles
from runner.config.run_config import RunConfig
from runner.estimate.cached import probes
from runner.estimate.guide import Guide, Scenario
from runner.estimate.history import history
from runner.estimate.hooks import (
    deprecated_forms,
    metric_phases,
    strategy_phases,
    summary_tokens,
)
from runner.estimate.latency import default_latency
from runner.estimate.rates import rate_seconds
from runner.estimate.span import Driver, Figures, Span
from runner.llm.batch import batch_api
from runner.llm.prices import Price, batch_price_of, price_of
from runner.llm.spec import ModelSpec

STARTUP_S = 10.0
"""Guess: a job's own seconds besides its calls, until the store has runs to measure it.

A cached rerun's start-up, litellm's import and logging the run
(``benchmarks/bench_estimate.py`` measures it)."""
STARTUP_BOUNDS = (4.0, 20.0)
"""A cached rerun on an idle machine, to a job started on a loaded one."""
PROCESS_S = 5.0
"""A job's seconds outside its MLflow run, added to a measured overhead: the interpreter,
Hydra, the config and documents (what ``estimate=true`` itself takes) and MLflow's import."""
BATCH_WAIT = (3600.0, 86400.0)
"""Seconds one batch round takes: typically (the point value and the cheap bound) and at most
(the dear bound). Anthropic: most batches end within an hour, all within 24 h; OpenAI: within
its 24 h completion window (no typical figure published: an hour assumed)."""
WAIT_WORDS = "about 1 h typical, 24 h at most, per batch round"
"""How the estimate words ``BATCH_WAIT``."""
WAIT_SOURCES = {
    "anthropic": "Anthropic: most batches end within 1 h, all within 24 h",
    "openai": "OpenAI: within its 24 h completion window; 1 h typical assumed",
}
"""What each provider publishes about its batches' wait."""


@dataclass(frozen=True)
class RoleFigures:
    """One role's share of a cell."""

    role: str
    model: str
    calls: float
    prompt_tokens: float
    completion_tokens: float
    cost_usd: float
    price_source: str
    latency_source: str
    spec: ModelSpec
    """The role's model (its endpoint and rate limits bound a sweep's total)."""
    online_usd: float = 0.0
    """USD of these calls at the online price."""
    batch_usd: float = 0.0
    """USD of these calls at the batch price (the online price when the role cannot batch)."""
    can_batch: bool = False
    """Whether ``<role>.batch=true`` would be accepted: its provider has a batch API and each
    plugin calling it lets it wait (``BATCH_ROLES``)."""
    batch_source: str = ""
    """Where the provider's batch price comes from ('' when it has no batch API)."""

    @property
    def figures(self) -> Figures:
        """This role's calls, tokens and USD (its wall time is the cell's)."""
        return Figures(
            self.calls,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            0.0,
            self.online_usd,
            self.batch_usd,
        )


@dataclass(frozen=True)
class CellEstimate:
    """What one job would cost and take."""

    name: str
    documents: int
    roles: tuple[RoleFigures, ...]
    wall_s: float
    notes: tuple[str, ...] = ()
    done_run: str | None = None
    """The FINISHED run with the same fingerprint: the cell costs nothing (resumed or cached)."""
    guesses: tuple[tuple[str, str], ...] = ()
    """(key, what it rests on) of each quantity that is not exact (``Scenario.used``)."""
    span: Span | None = None
    """The least and most of each figure over the guesses' bounds (None: not computed)."""
    drivers: tuple[Driver, ...] = field(default=())
    unknown: tuple[str, ...] = ()
    """The plugins whose calls are not counted (``strategy x``, ``metric y``: no ``estimate``
    hook): the cell's figures are then lower bounds, and printed so."""
    unknown_roles: tuple[str, ...] = ()
    """The roles those plugins call: their rows are lower bounds too."""
    """Each guess with the span it drives alone (``ranges.py``)."""
    role_spans: tuple[Span, ...] = ()
    """Each role's span, in the order of ``roles`` (empty: not computed)."""
    batch_rounds: tuple[tuple[str, int], ...] = ()
    """(role, batch rounds one after another) of each role with ``batch=true`` that calls."""

    @property
    def figures(self) -> Figures:
        """This estimate's totals (the point values)."""
        return Figures(
            self.calls,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            self.wall_s,
            sum(r.online_usd for r in self.roles),
            sum(r.batch_usd for r in self.roles),
        )

    @property
    def mixed(self) -> bool:
        """Whether what the job pays is neither all-online nor all-batch.

        Some roles batch, and another that could does not.
        """
        batched = [r for r in self.roles if r.spec.batch]
        return bool(batched) and any(r.can_batch and not r.spec.batch for r in self.roles)

    @property
    def range(self) -> Span:
        """The span of each figure: the point itself when no range was computed."""
        return self.span if self.span is not None else Span.exact(self.figures)

    @property
    def calls(self) -> float:
        """Model calls of every role."""
        return sum(r.calls for r in self.roles)

    @property
    def prompt_tokens(self) -> float:
        """Prompt tokens of every role."""
        return sum(r.prompt_tokens for r in self.roles)

    @property
    def completion_tokens(self) -> float:
        """Completion tokens of every role."""
        return sum(r.completion_tokens for r in self.roles)

    @property
    def cost_usd(self) -> float:
        """USD of every role."""
        return sum(r.cost_usd for r in self.roles)


def guides(config: RunConfig, scenario: Scenario | None = None) -> dict[str, Guide]:
    """Each role's history, latency, concurrency and response-cache probe."""
    out = {}
    found_probes = probes(config)
    shared = scenario if scenario is not None else Scenario()
    for role, spec in config.roles.items():
        concurrency = max(1, int(spec.concurrency))
        found = history(config.tracking_uri, spec.model, concurrency)
        latency = found.latency or default_latency(spec)
        out[role] = Guide(found, latency, concurrency, role, shared, probe=found_probes[role])
    return out


def estimate_cell(
    config: RunConfig, items: list[WorkItem], name: str, scenario: Scenario | None = None
) -> CellEstimate:
    """Calls, tokens, cost and wall time of the job ``config`` over ``items``.

    ``scenario``: the side taken of each guessed quantity (its point value by default).
    """
    scenario = scenario if scenario is not None else Scenario()
    guide = guides(config, scenario)
    prices = {role: price_of(spec) for role, spec in config.roles.items()}
    window = prices["model"].window if "model" in prices else 0
    per_role: dict[str, list[float]] = {role: [0.0, 0.0, 0.0] for role in config.roles}
    batched = {role for role, spec in config.roles.items() if spec.batch}
    seconds: dict[str, float] = {role: 0.0 for role in config.roles if role not in batched}
    rounds: dict[str, list[str]] = {}
    longest, notes = 0.0, set()
    unknown: set[str] = set()
    for item in items:
        phases, note = strategy_phases(config, item, window, guide)
        scored, more = metric_phases(config, item, summary_tokens(phases), guide)
        notes.update([note, *more])
        unknown.update(n.split(":", 1)[0] for n in (note, *more) if n)  # "strategy x: ..."
        path = 0.0
        steps: dict[str, list[str]] = {}
        for phase in phases + scored:
            figures = per_role[phase.role]
            figures[0] += phase.calls
            figures[1] += phase.prompt_tokens
            figures[2] += phase.completion_tokens
            if phase.role in batched:  # no online latency: a batch round (waited for below)
                steps.setdefault(phase.role, []).extend([phase.purpose] if phase.calls else [])
                continue
            each = _per_call(guide[phase.role], phase)
            path += phase.rounds * each
            seconds[phase.role] += phase.calls * each
        longest = max(longest, path)
        for role, purposes in steps.items():
            if len(purposes) > len(rounds.get(role, [])):
                rounds[role] = purposes
    roles = tuple(
        _role_figures(config, role, prices[role], guide[role], figures)
        for role, figures in per_role.items()
        if figures[0]
    )
    wall = max([longest, *[_through(config, role, seconds, per_role) for role in seconds]])
    for role, purposes in sorted(rounds.items()):
        wall += len(purposes) * _round_wait(guide[role], config.roles[role])
        notes.update(_wait_notes(role, config.roles[role], purposes))
    for role in config.roles:
        if guide[role].hits[0]:
            notes.add(f"cache ({role}): {guide[role].hits[0]} requests answered, not counted")
    measured = [g.history.overhead_s for g in guide.values() if g.history.overhead_s is not None]
    if measured:
        overhead = max(measured) + PROCESS_S
    else:
        low, high = STARTUP_BOUNDS
        text = f"guess ~{STARTUP_S:.0f} s (bounds: {low:.0f}-{high:.0f} s)"
        overhead = scenario.pick("job's own seconds", STARTUP_S, low, high, text)
    notes.update(deprecated_forms(config))
    kept = tuple(sorted(n for n in notes if n))
    used = tuple(sorted(scenario.used.items()))
    return CellEstimate(
        name,
        len(items),
        roles,
        wall + overhead,
        kept,
        guesses=used,
        unknown=tuple(sorted(unknown)),
        unknown_roles=_roles_of(config, unknown),
        batch_rounds=tuple((role, len(purposes)) for role, purposes in sorted(rounds.items())),
    )


def _role_figures(
    config: RunConfig, role: str, online: Price, guide: Guide, figures: list[float]
) -> RoleFigures:
    """One role's figures: what it pays as configured, online and in batches."""
    spec = config.roles[role]
    calls, prompt, completion = figures
    able = can_batch(config, role)
    offered = batch_price_of(spec) if batch_api(spec) is not None else None
    batch = offered if able and offered is not None else online
    online_usd, batch_usd = online.cost(prompt, completion), batch.cost(prompt, completion)
    return RoleFigures(
        role,
        spec.name,
        calls,
        prompt,
        completion,
        batch_usd if spec.batch else online_usd,
        online.source,
        guide.latency.source,
        spec,
        online_usd=online_usd,
        batch_usd=batch_usd,
        can_batch=able,
        batch_source=offered.source if offered is not None else "",
    )


def can_batch(config: RunConfig, role: str) -> bool:
    """Whether ``<role>.batch=true`` would pass the config's check (``runner.config.batching``).

    Its provider has a batch API, and the strategy and every metric that call the role let
    its requests wait (``BATCH_ROLES``): incremental's model role, whose every update waits on
    the last, cannot.
    """
    if batch_api(config.roles[role]) is None:
        return False
    strategy = config.strategy_module
    if role in strategy.ROLES and role not in batch_roles(strategy, is_strategy=True):
        return False
    for label in config.metrics:
        metric = config.metric_module(label)
        if role in metric.ROLES and role not in batch_roles(metric, is_strategy=False):
            return False
    return True


def _round_wait(guide: Guide, spec: ModelSpec) -> float:
    """Seconds one batch round of ``guide``'s role takes (a guess: typical, bounded by 24 h)."""
    typical, most = BATCH_WAIT
    said = WAIT_SOURCES.get(batch_api(spec) or "", "")
    text = WAIT_WORDS + (f" ({said})" if said else "")
    return guide.pick("batch wait per round", typical, typical, most, text)


def _wait_notes(role: str, spec: ModelSpec, purposes: list[str]) -> list[str]:
    """What the job waits for ``role``'s batches; a worst case beyond its batch_timeout."""
    typical, most = BATCH_WAIT
    n = len(purposes)
    steps = f"{', '.join(purposes)}: each round holds that step's requests of every document"
    if n == 1:
        waits = f"1 batch round ({steps}): {WAIT_WORDS}"
    else:
        waits = (
            f"{n} batch rounds one after another ({steps}): {WAIT_WORDS}, so "
            f"{_hours(n * typical)} typical, {_hours(n * most)} at most"
        )
    out = [
        f"{role}={spec.name} in batches: {waits}; its wall time is that wait (a re-ask of an "
        f"unreadable answer adds a round)"
    ]
    if n * most > spec.batch_timeout:
        out.append(
            f"{role}={spec.name} in batches: {_hours(n * most)} at most is more than "
            f"{role}.batch_timeout={spec.batch_timeout:.0f} ({_hours(spec.batch_timeout)}): "
            f"batches that take the provider's whole window end the job FAILED (a rerun waits "
            f"for them again, paying nothing twice); raise {role}.batch_timeout to wait them out"
        )
    return out


def _hours(seconds: float) -> str:
    """'1 h', '24 h', '96 h'."""
    return f"{seconds / 3600:.0f} h"


def _roles_of(config: RunConfig, unknown: set[str]) -> tuple[str, ...]:
    """The model roles of the plugins named ``strategy <name>`` or ``metric <label>``."""
    roles: set[str] = set()
    for who in unknown:
        kind, _, label = who.partition(" ")
        module = config.strategy_module if kind == "strategy" else config.metric_module(label)
        roles.update(module.ROLES)
    return tuple(sorted(roles))


def _per_call(guide: Guide, phase: Phase) -> float:
    if not phase.calls:
        return 0.0
    return guide.latency.seconds(
        phase.prompt_tokens / phase.calls, phase.completion_tokens / phase.calls
    )


def _through(
    config: RunConfig, role: str, seconds: dict[str, float], figures: dict[str, list[float]]
) -> float:
    """The least time the endpoint lets ``role``'s online calls take: concurrency, rate limits.

    A batched role's calls wait for their batch instead.
    """
    spec = config.roles[role]
    calls, prompt, completion = figures[role]
    bound = seconds[role] / max(1, int(spec.concurrency))
    return max(bound, rate_seconds(spec, calls, prompt, completion))
