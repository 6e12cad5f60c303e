"""One cell's (one job's) estimate: calls, tokens, cost and wall time of its roles.

The documents are those the job would read; each is chunked with the real tokenizer
(``runner.chunking``, cached per text and chunk size across a sweep's cells) and its
strategy's and metrics' calls counted by each plugin's own ``estimate`` hook
(``runner.estimating``; without one its calls are noted as unknown). Wall time: each document's
critical path at the roles' seconds per call, documents side by side up to the widest
role's concurrency, never under what the endpoint's concurrency and provider limits
(``model.rpm``, ``tpm``, ``input_tpm``, ``output_tpm``) let through.

Every figure that is not exact is taken through the cell's ``Scenario`` (``guide.py``), so
``ranges.py`` can make the same cell again at its guesses' bounds.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from runner.chunking import split_into_chunks
from runner.config.run_config import RunConfig
from runner.errors import RunnerError
from runner.estimate.cached import probes
from runner.estimate.guide import Guide, Scenario
from runner.estimate.history import history
from runner.estimate.latency import default_latency
from runner.estimate.rates import rate_seconds
from runner.estimate.span import Driver, Figures, Span
from runner.estimating import Guide as HookGuide
from runner.estimating import Phase, Prompt
from runner.llm.prices import price_of
from runner.llm.spec import ModelSpec
from runner.plugins.identity import prompt_folders
from runner.types import Chunk, WorkItem

STARTUP_S = 10.0
"""Guess: a job's own seconds besides its calls, until the store has runs to measure it.

A cached rerun's start-up, litellm's import and logging the run
(``benchmarks/bench_estimate.py`` measures it)."""
STARTUP_BOUNDS = (4.0, 20.0)
"""A cached rerun on an idle machine, to a job started on a loaded one."""
PROCESS_S = 5.0
"""A job's seconds outside its MLflow run, added to a measured overhead: the interpreter,
Hydra, the config and documents (what ``estimate=true`` itself takes) and MLflow's import."""
UNKNOWN_STRATEGY = (
    "strategy {name}: its calls are unknown (not counted); declare "
    "estimate(chunks, <roles>, *, window, prompt, <params>) -> list[Phase] in its module "
    "(runner.api) to count them"
)
"""The note for a strategy with model roles and no ``estimate`` hook."""
UNKNOWN_METRIC = (
    "metric {label}: its calls are unknown (not counted); declare "
    "estimate(summary, expected, <roles>, *, prompt, <params>) -> list[Phase] in its module "
    "(runner.api) to count them"
)
"""The note for a metric with model roles and no ``estimate`` hook."""


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

    @property
    def figures(self) -> Figures:
        """This role's calls, tokens and USD (its wall time is the cell's)."""
        return Figures(self.calls, self.prompt_tokens, self.completion_tokens, self.cost_usd)


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

    @property
    def figures(self) -> Figures:
        """This estimate's totals (the point values)."""
        return Figures(
            self.calls, self.prompt_tokens, self.completion_tokens, self.cost_usd, self.wall_s
        )

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


_CHUNKS: dict[tuple[str, int], list[Chunk]] = {}
"""(text's digest, chunk size) -> its chunks: a sweep's cells chunk each document once."""


def chunks_of(text: str, chunk: int) -> list[Chunk]:
    """The document's chunks, as the job's ``split_into_chunks`` makes them."""
    key = (hashlib.sha256(text.encode()).hexdigest(), chunk)
    if key not in _CHUNKS:
        _CHUNKS[key] = split_into_chunks(text, chunk)
    return _CHUNKS[key]


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


def _prompts(module: ModuleType) -> Prompt:
    """A plugin's prompt file by its path within the folders it declares (``PROMPT_DIRS``)."""
    folders = dict(zip(module.PROMPT_DIRS, prompt_folders(module).values(), strict=True))

    def find(relative: str) -> Path | None:
        head, _, rest = relative.partition("/")
        folder = folders.get(head)
        path = folder / rest if folder is not None and rest else None
        return path if path is not None and path.is_file() else None

    return find


def _strategy(
    config: RunConfig, item: WorkItem, window: int, guide: dict[str, Guide]
) -> tuple[list[Phase], str]:
    """The strategy's phases for one document (its ``estimate`` hook); a note without one."""
    if item.summary is not None or item.source is None:
        return [], ""
    module = config.strategy_module
    hook = getattr(module, "estimate", None)
    if hook is None:  # a strategy with no model role calls none: nothing to count
        return [], UNKNOWN_STRATEGY.format(name=config.strategy) if module.ROLES else ""
    chunks = chunks_of(item.source.text, config.chunk)
    roles: dict[str, HookGuide] = {role: guide[role] for role in module.ROLES}
    prompt = _prompts(module)
    params = config.strategy_params
    return _called(
        f"strategy {config.strategy}",
        module,
        hook,
        chunks,
        **roles,
        window=window,
        prompt=prompt,
        **params,
    ), ""


def _summary_tokens(phases: list[Phase]) -> float:
    """Expected tokens of the final summary: the answer of the strategy's last call."""
    last = [p for p in phases if p.role == "model" and p.calls]
    return last[-1].completion_tokens / last[-1].calls if last else 0.0


def _metrics(
    config: RunConfig, item: WorkItem, summary: float, guide: dict[str, Guide]
) -> tuple[list[Phase], list[str]]:
    """The metrics' calls for one document (their ``estimate`` hooks); notes for the others."""
    phases, notes = [], []
    for label, params in config.metrics.items():
        module = config.metric_module(label)
        hook = getattr(module, "estimate", None)
        if hook is not None:
            roles: dict[str, HookGuide] = {role: guide[role] for role in module.ROLES}
            prompt = _prompts(module)
            asks = inspect.signature(hook).parameters
            if "extras" in asks:  # what the data says about the summary (given claims)
                params = {**params, "extras": dict(item.extras)}
            if "document" in asks:  # the source, for a metric whose prompts carry it
                params = {**params, "document": item.source}
            phases += _called(
                f"metric {label}",
                module,
                hook,
                item.summary,
                summary,
                **roles,
                prompt=prompt,
                **params,
            )
        elif module.ROLES:
            notes.append(UNKNOWN_METRIC.format(label=label))
    return phases, notes


def _called(
    who: str, module: ModuleType, hook: Callable[..., Any], *args: Any, **kwargs: Any
) -> list[Phase]:
    """A plugin's ``estimate`` hook called, its answer checked: a list of ``Phase``s."""
    try:
        phases = hook(*args, **kwargs)
    except RunnerError:
        raise
    except Exception as err:
        raise RunnerError(
            f"{who}: its estimate hook raised {type(err).__name__}: {err}; "
            f"fix estimate in {getattr(module, '__file__', module.__name__)}"
        ) from err
    if not isinstance(phases, list) or not all(isinstance(p, Phase) for p in phases):
        raise RunnerError(
            f"{who}: its estimate hook returned {type(phases).__name__}, not a list of "
            f"runner.api.Phase; fix estimate in {getattr(module, '__file__', module.__name__)}"
        )
    return phases


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
    seconds: dict[str, float] = {role: 0.0 for role in config.roles}
    longest, notes = 0.0, set()
    unknown: set[str] = set()
    for item in items:
        phases, note = _strategy(config, item, window, guide)
        scored, more = _metrics(config, item, _summary_tokens(phases), guide)
        notes.update([note, *more])
        unknown.update(n.split(":", 1)[0] for n in (note, *more) if n)  # "strategy x: ..."
        path = 0.0
        for phase in phases + scored:
            figures = per_role[phase.role]
            figures[0] += phase.calls
            figures[1] += phase.prompt_tokens
            figures[2] += phase.completion_tokens
            each = _per_call(guide[phase.role], phase)
            path += phase.rounds * each
            seconds[phase.role] += phase.calls * each
        longest = max(longest, path)
    roles = tuple(
        RoleFigures(
            role,
            config.roles[role].name,
            calls,
            prompt,
            completion,
            prices[role].cost(prompt, completion),
            prices[role].source,
            guide[role].latency.source,
            config.roles[role],
        )
        for role, (calls, prompt, completion) in per_role.items()
        if calls
    )
    wall = max([longest, *[_through(config, role, seconds, per_role) for role in seconds]])
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
    )


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
    """The least time the endpoint lets ``role``'s calls take: concurrency and rate limits."""
    spec = config.roles[role]
    calls, prompt, completion = figures[role]
    bound = seconds[role] / max(1, int(spec.concurrency))
    return max(bound, rate_seconds(spec, calls, prompt, completion))
