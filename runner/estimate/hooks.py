"""What a cell's plugins say it calls: their ``estimate`` hooks, per document.

Each document is chunked with the real tokenizer (``runner.api.chunking``, cached per text and
chunk size across a sweep's cells); the strategy's hook gets the chunks and each of its roles
as a ``runner.api.estimating.Guide``, each metric's hook the expected summary length. A plugin
with model roles and no hook is a note naming the hook to declare, never a zero; a hook
that raises or returns something else than ``Phase``s is one line naming its file. The
figures (cost, wall time) made of these phases are ``runner.estimate.cell``.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from runner.api.chunking import split_into_chunks
from runner.api.errors import RunnerError
from runner.api.estimating import (
    DEPRECATED_FORM,
    NEW_FORM,
    EstimateInput,
    MetricEstimateInput,
    Phase,
    Prompt,
    StrategyEstimateInput,
    run_estimate,
    takes_one_input,
)
from runner.api.types import Chunk, WorkItem
from runner.config.panel import member_role
from runner.config.run_config import SAMPLED_ROLE, RunConfig
from runner.estimate.guide import Guide
from runner.plugins.identity import prompt_folders

UNKNOWN_STRATEGY = (
    "strategy {name}: its calls are unknown (not counted); declare "
    "estimate(inputs: runner.api.StrategyEstimateInput) -> list[Phase] in its module to "
    "count them"
)
"""The note for a strategy with model roles and no ``estimate`` hook."""
UNKNOWN_METRIC = (
    "metric {label}: its calls are unknown (not counted); declare "
    "estimate(inputs: runner.api.MetricEstimateInput) -> list[Phase] in its module to "
    "count them"
)
"""The note for a metric with model roles and no ``estimate`` hook."""
_CHUNKS: dict[tuple[str, int], list[Chunk]] = {}
"""(text's digest, chunk size) -> its chunks: a sweep's cells chunk each document once."""


def chunks_of(text: str, chunk: int) -> list[Chunk]:
    """The document's chunks, as the job's ``split_into_chunks`` makes them."""
    key = (hashlib.sha256(text.encode()).hexdigest(), chunk)
    if key not in _CHUNKS:
        _CHUNKS[key] = split_into_chunks(text, chunk)
    return _CHUNKS[key]


def _prompts(module: ModuleType) -> Prompt:
    """A plugin's prompt file by its path within the folders it declares (``PROMPT_DIRS``)."""
    folders = dict(zip(module.PROMPT_DIRS, prompt_folders(module).values(), strict=True))

    def find(relative: str) -> Path | None:
        head, _, rest = relative.partition("/")
        folder = folders.get(head)
        path = folder / rest if folder is not None and rest else None
        return path if path is not None and path.is_file() else None

    return find


def strategy_phases(
    config: RunConfig, item: WorkItem, window: int, guide: dict[str, Guide]
) -> tuple[list[Phase], str]:
    """The strategy's phases for one document (its ``estimate`` hook); a note without one."""
    if item.summary is not None or item.source is None:
        return [], ""
    module = config.strategy_module
    if getattr(module, "estimate", None) is None:  # no model role: it calls none
        return [], UNKNOWN_STRATEGY.format(name=config.strategy) if module.ROLES else ""
    inputs = StrategyEstimateInput(
        chunks_of(item.source.text, config.chunk),
        {role: guide[role] for role in module.ROLES},
        window,
        _prompts(module),
        config.strategy_params,
    )
    return _called(f"strategy {config.strategy}", module, inputs), ""


def summary_tokens(phases: list[Phase]) -> float:
    """Expected tokens of the final summary: the answer of the strategy's last call."""
    last = [p for p in phases if p.role == "model" and p.calls]
    return last[-1].completion_tokens / last[-1].calls if last else 0.0


def metric_phases(
    config: RunConfig, item: WorkItem, summary: float, guide: dict[str, Guide]
) -> tuple[list[Phase], list[str]]:
    """The metrics' calls for one document (their ``estimate`` hooks); notes for the others."""
    phases, notes = [], []
    for label, params in config.metrics.items():
        module = config.metric_module(label)
        if getattr(module, "estimate", None) is not None:
            for judge, role in _judges(config, module):
                roles = {r: guide[role if r == SAMPLED_ROLE else r] for r in module.ROLES}
                inputs = MetricEstimateInput(
                    item.summary,
                    summary,
                    roles,
                    _prompts(module),
                    params,
                    item.source,
                    dict(item.extras),
                )
                found = _called(f"metric {label}", module, inputs)
                phases += sampled(config, found, role) if judge is not None else found
        elif module.ROLES:
            notes.append(UNKNOWN_METRIC.format(label=label))
    return phases, notes


def _judges(config: RunConfig, module: ModuleType) -> list[tuple[str | None, str]]:
    """(alias, role) of each judge the metric is asked through.

    Each panel member's role, else the judge; ``[(None, "")]`` for a metric without a judge.
    """
    if SAMPLED_ROLE not in module.ROLES:
        return [(None, "")]
    if config.panel:
        return [(name, member_role(name)) for name in config.panel]
    return [("", SAMPLED_ROLE)]


def sampled(config: RunConfig, phases: list[Phase], role: str = SAMPLED_ROLE) -> list[Phase]:
    """A metric's judge phases as ``role``'s, asked ``<role>.samples`` times.

    ``role`` is the judge or a panel member's; its samples run one after another.
    """
    times = config.roles[role].samples if role in config.roles else 1
    return [
        replace(
            p,
            role=role,
            calls=p.calls * times,
            prompt_tokens=p.prompt_tokens * times,
            completion_tokens=p.completion_tokens * times,
            rounds=p.rounds * times,
        )
        if p.role == SAMPLED_ROLE
        else p
        for p in phases
    ]


def deprecated_forms(config: RunConfig) -> list[str]:
    """One line per plugin of the cell whose ``estimate`` takes the older keyword form."""
    hooks: list[tuple[str, ModuleType, type]] = [
        (f"strategy {config.strategy}", config.strategy_module, StrategyEstimateInput)
    ]
    hooks += [
        (f"metric {label}", config.metric_module(label), MetricEstimateInput)
        for label in config.metrics
    ]
    return [
        DEPRECATED_FORM.format(who=who, form=NEW_FORM[kind])
        for who, module, kind in hooks
        if getattr(module, "estimate", None) is not None and not takes_one_input(module.estimate)
    ]


def _called(who: str, module: ModuleType, inputs: EstimateInput) -> list[Phase]:
    """A plugin's ``estimate`` hook called, its answer checked: a list of ``Phase``s."""
    try:
        phases = run_estimate(module, inputs)
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
