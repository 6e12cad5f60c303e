"""Typed, validated run configuration built from Hydra's composed config.

Only ``runner/__main__.py`` sees a ``DictConfig``; it hands the plain container here.
Validation happens before any model is loaded or run created, and each failure is a
``ConfigError`` naming the key and a valid choice. Importing this module imports no
litellm and no MLflow (``--cfg``, ``--help`` and config errors stay fast).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any

from runner.api.errors import ConfigError
from runner.api.params import declared
from runner.config.batching import check_batch
from runner.config.checks import check_fields, number, refuse_secret
from runner.config.data_config import DataConfig, data_config
from runner.config.panel import (
    JUDGE,
    PANEL_KEY,
    is_judge_role,
    member_role,
    panel_names,
)
from runner.config.unused_roles import check_unused_roles, unasked_model, unasked_roles
from runner.data.sources import SOURCE_KEYS
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec, narrower_ranges
from runner.plugins.contract import MODEL_ROLES
from runner.plugins.registry import Plugin, find, load
from runner.tracking.store import default_tracking_uri

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The folder above the packages: a clone's root, or ``site-packages`` for an installed wheel.
Only the git commit is looked up here; results go under the current folder."""
ALL_ROLES: tuple[str, ...] = MODEL_ROLES
"""Top-level config keys that are model roles (each a ``conf/<role>/`` group)."""


@dataclass(frozen=True)
class RunConfig:
    """Everything one job needs, validated."""

    strategy: str
    """The strategy's name as the config gives it (registered name, import path or file)."""
    strategy_params: dict[str, Any]
    """Keyword parameters of the strategy function."""
    roles: dict[str, ModelSpec]
    """The model of each role the strategy and metrics declare (and only those)."""
    data: DataConfig
    """The documents."""
    metrics: dict[str, dict[str, Any]]
    """Metric label (its key in ``metrics``) -> keyword parameters of its ``setup``."""
    chunk: int
    """Tokens per chunk."""
    temperature: float | None
    """Summarizer (role ``model``) temperature override."""
    seed: int | None
    """Seed passed to every model that accepts one."""
    tracking_uri: str
    """MLflow tracking URI."""
    experiment: str
    """MLflow experiment name."""
    cache_dir: str | None
    """Response cache folder (None = disabled)."""
    progress: str
    """bar (a terminal), lines (one per document, for logs) or off (``runner/run/progress.py``)."""
    budget_usd: float | None = None
    """Stop the job's model calls at this spending (USD)."""
    sweep_budget_usd: float | None = None
    """Stop the sweep's model calls at this spending (USD), shared by its jobs."""
    force: bool = False
    """Rerun a sweep cell that already has a FINISHED run with the same fingerprint."""
    repeat: int = 0
    """Repeat index: seeds become seed + repeat and responses get their own cache slots."""
    on_error: str = "fail"
    """'fail': the first failed document stops the job (the others are cancelled) and the run
    ends FAILED; 'continue': the other documents finish, the failed ones are recorded."""
    resolved: dict[str, Any] = field(default_factory=dict)
    """The full resolved config, logged as config.yaml."""
    panel: tuple[str, ...] = ()
    """The judge aliases of ``judges=``: each a role ``judge:<name>`` replacing ``judge``."""
    overrides: tuple[str, ...] = ()
    """Hydra overrides of this job; they name the MLflow run."""
    plugins: dict[str, Plugin] = field(default_factory=dict)
    """``data``, ``strategy``, ``metrics.<label>`` and the plugins their parameters name
    (``strategy.draft``: ``PLUGIN_PARAMS``) -> where that code comes from
    (``runner/plugins/registry.py``); already imported and checked."""
    unasked: tuple[str, ...] = ()
    """A line per override of a role nothing in the job asks (``judge.samples=3`` with only
    ``metrics=stats``): a single job is refused with the first; a sweep's cell (where the
    key may be for its other cells) says each in a note."""

    @property
    def named_plugins(self) -> dict[str, Plugin]:
        """The plugins the job's plugins name by a parameter (``strategy.draft``)."""
        own = {"data", "strategy", *(f"metrics.{label}" for label in self.metrics)}
        return {key: p for key, p in self.plugins.items() if key not in own}

    @property
    def strategy_module(self) -> ModuleType:
        """The strategy's module (``summarize`` and ``ROLES``)."""
        return load(self.plugins["strategy"])

    @property
    def call_seed(self) -> int | None:
        """The seed every role's calls carry: ``seed + repeat`` (each repeat its own samples)."""
        return None if self.seed is None else self.seed + self.repeat

    def temperature_of(self, role: str) -> float | None:
        """The run-level ``temperature`` override of ``role``.

        The summarizer's only; None means the role's own ``<role>.temperature``.
        """
        return self.temperature if role == "model" else None

    def metric_module(self, label: str) -> ModuleType:
        """The module of the metric configured as ``metrics.<label>`` (``setup`` and ``ROLES``)."""
        return load(self.plugins[f"metrics.{label}"])


def _keyword_params(fn: Callable[..., Any]) -> set[str]:
    return set(declared(fn).params)


def _check_params(kind: str, name: str, fn: Callable[..., Any], params: dict[str, Any]) -> None:
    accepted = _keyword_params(fn)
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ConfigError(
            f"{kind}.{unknown[0]} is not a parameter of {kind} {name!r}; "
            f"valid keys: {', '.join(sorted(accepted)) or 'none'}"
        )


SAMPLED_ROLE = "judge"
"""The one role whose answers may be sampled repeatedly (``judge.samples``)."""


def model_spec(raw: dict[str, Any], role: str) -> ModelSpec:
    """A ModelSpec from a role's config block, rejecting unknown keys."""
    raw = dict(raw)
    known = {f.name for f in fields(ModelSpec)}
    unknown = sorted(set(raw) - known)
    for key in unknown:
        refuse_secret(role, key)
    if unknown:
        raise ConfigError(
            f"{role}.{unknown[0]} is not a model setting; valid: {', '.join(sorted(known))}"
        )
    if not raw.get("model"):
        raise ConfigError(f"{role}.model is empty; give a litellm model string, e.g. openai/gpt-4o")
    lacking = [
        f.name
        for f in fields(ModelSpec)
        if f.default is MISSING and f.default_factory is MISSING and raw.get(f.name) is None
    ]
    if lacking:  # an alias file of the user's own without its defaults: line
        raise ConfigError(
            f"{role}.{lacking[0]} is missing: the {role} alias sets no {lacking[0]}; start its "
            f"file with 'defaults: [/model/<a model alias>@_here_, _self_]' as the shipped "
            f"conf/{role.split(':')[0]}/*.yaml do, or give {lacking[0]}: in it"
        )
    check_fields(ModelSpec, raw, role)
    if not is_judge_role(role) and raw.get("samples") not in (None, 1):
        raise ConfigError(
            f"{role}.samples={raw['samples']}: repeated samples are the judge's; "
            f"use {SAMPLED_ROLE}.samples={raw['samples']} (or remove {role}.samples)"
        )
    retry = dict(raw.get("retry") or {})
    settings = [f.name for f in fields(RetryPolicy)]
    stray = sorted(set(retry) - set(settings))
    if stray:
        raise ConfigError(
            f"{role}.retry.{stray[0]} is not a retry setting; valid: {', '.join(settings)}"
        )
    check_fields(RetryPolicy, retry, f"{role}.retry")
    whose, narrower = narrower_ranges(str(raw["model"]))
    for key, values in narrower.items():
        values.check(f"{role}.{key}", raw.get(key), f"{whose} ({raw['model']})")
    raw["retry"] = RetryPolicy(**retry)
    return ModelSpec(**{k: v for k, v in raw.items() if v is not None})


def _metric_target(label: str, params: dict[str, Any]) -> str:
    """The metric a ``metrics.<label>`` block runs.

    Its ``name`` key (a registered name or an import path, for a plugin), else the label.
    """
    return str(params.pop("name", None) or label)


def _roles(raw: dict[str, Any], needs: dict[str, str]) -> dict[str, ModelSpec]:
    """The specs of the roles needed; ``needs`` maps role -> who needs it (for the message)."""
    out = {}
    for role, who in needs.items():
        if not isinstance(raw.get(role), dict):
            raise ConfigError(
                f"{who} needs the model role '{role}'; add {role}=<model alias> (see conf/model/)"
            )
        out[role] = model_spec(raw[role], role)
    return out


def _check_data_and_strategy(
    data: DataConfig, strategy: str, strategy_params: dict[str, Any]
) -> None:
    if strategy == "precomputed":
        file = strategy_params.get("summaries") or "FILE.json"
        raise ConfigError(
            f"strategy=precomputed was replaced; use strategy=none data=summaries data.path={file} "
            "(data.sources=DIR adds the source texts)"
        )
    built_in_without_summaries = data.source in SOURCE_KEYS and data.source != "summaries"
    if (data.source == "summaries" and strategy != "none") or (
        strategy == "none" and built_in_without_summaries
    ):
        raise ConfigError(
            "data=summaries scores summaries made elsewhere and goes with strategy=none; "
            "use both together (python -m runner strategy=none data=summaries data.path=FILE.json)"
        )


def _check_run_temperature(temperature: Any, roles: dict[str, ModelSpec]) -> None:
    """``temperature=``, the summarizer's, within its provider's range.

    That range may be narrower than the 0..2 checked for every model (Anthropic's is 0..1).
    """
    if temperature is None or "model" not in roles:
        return
    model = roles["model"].model
    whose, narrower = narrower_ranges(model)
    if "temperature" in narrower:
        narrower["temperature"].check("temperature", temperature, f"{whose} ({model})")


def _named_plugins(at: str, module: Any, params: dict[str, Any]) -> dict[str, Plugin]:
    """The plugins a plugin's parameters name (its ``PLUGIN_PARAMS``), found and checked.

    Keyed ``<at>.<param>`` (``strategy.draft``), beside the job's own plugins: their identity
    and prompts enter the fingerprint as the job's own do. A name the registry does not know,
    or a plugin needing a role the one naming it does not have, is a one-line error here,
    before anything runs.
    """
    found: dict[str, Plugin] = {}
    for param, kind in dict(getattr(module, "PLUGIN_PARAMS", {})).items():
        value = params.get(param)
        if value is None:
            continue
        key = f"{at}.{param}"
        try:
            plugin = find(kind, value)
            named = load(plugin)
        except ConfigError as err:
            raise ConfigError(f"{key}={value}: {err}") from None
        extra = [r for r in getattr(named, "ROLES", ()) if r not in module.ROLES]
        if extra:
            raise ConfigError(
                f"{key}={value} needs the role {extra[0]!r}, which {at} does not give it "
                f"(its roles: {', '.join(module.ROLES) or 'none'}); choose a {kind} without it"
            )
        found[key] = plugin
    return found


def _panel_needs(needs: dict[str, str], panel: tuple[str, ...], strategy: str) -> dict[str, str]:
    """The roles with ``judge`` replaced by one ``judge:<name>`` per member of the panel."""
    who = needs.get(JUDGE)
    if who is None:
        raise ConfigError(
            f"judges=[{','.join(panel)}] is a panel of the metrics' judge, but no metric of this "
            "job asks a judge; add one (metrics=booookscore) or leave judges out"
        )
    if who == f"strategy={strategy}":
        raise ConfigError(
            f"judges= replaces the metrics' judge, but strategy={strategy} asks the judge itself; "
            "give it one judge=<alias> and leave judges out"
        )
    out = {role: by for role, by in needs.items() if role != JUDGE}
    out.update({member_role(name): who for name in panel})
    return out


def build_run_config(raw: dict[str, Any], overrides: tuple[str, ...] = ()) -> RunConfig:
    """Validate the composed config (a plain dict) into a RunConfig."""
    strategy_raw = dict(raw.get("strategy") or {})
    name = strategy_raw.pop("name", None)
    data = data_config(raw.get("data"))
    _check_data_and_strategy(data, str(name), strategy_raw)
    plugins = {"data": find("data", data.source), "strategy": find("strategy", name)}
    strategy = load(plugins["strategy"])
    _check_params("strategy", str(name), strategy.summarize, strategy_raw)
    plugins.update(_named_plugins("strategy", strategy, strategy_raw))
    needs = {role: f"strategy={name}" for role in strategy.ROLES}
    metrics = {str(k): dict(v or {}) for k, v in (raw.get("metrics") or {}).items()}
    modules = {}
    for metric, params in metrics.items():
        plugins[f"metrics.{metric}"] = find("metrics", _metric_target(metric, params))
        module = modules[metric] = load(plugins[f"metrics.{metric}"])
        _check_params(f"metrics.{metric}", metric, module.setup, params)
        plugins.update(_named_plugins(f"metrics.{metric}", module, params))
        needs.update({role: f"metric {metric}" for role in module.ROLES if role not in needs})
    panel = panel_names(raw.get(PANEL_KEY))
    if panel:
        needs = _panel_needs(needs, panel, str(name))
    unasked = unasked_roles(overrides, needs, bool(panel), str(name), list(metrics))
    chunk = raw.get("chunk")
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk <= 0:
        raise ConfigError(
            f"chunk={chunk} must be a positive whole number of tokens; try chunk=2048"
        )
    temperature = raw.get("temperature")
    if temperature is not None:
        temperature = number("temperature", temperature, 0.0, 2.0, "temperature=0.5")
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"seed={seed} must be a whole number (or null); try seed=0")
    tracking = raw.get("tracking") or {}
    budget = raw.get("budget") or {}
    cache = raw.get("cache") or {}
    roles = _roles(raw, needs)
    check_unused_roles(raw, needs, overrides)
    unasked += unasked_model(raw, roles, overrides, str(name), list(metrics))
    _check_run_temperature(temperature, roles)
    check_batch(roles, (str(name), strategy), modules, bool(cache.get("enabled", True)))
    return RunConfig(
        strategy=str(name),
        strategy_params=strategy_raw,
        roles=roles,
        data=data,
        metrics=metrics,
        chunk=chunk,
        temperature=None if temperature is None else float(temperature),
        seed=seed,
        tracking_uri=tracking.get("uri") or default_tracking_uri(),
        experiment=str(tracking.get("experiment") or "summarization"),
        cache_dir=(cache.get("dir") or default_cache_dir()) if cache.get("enabled", True) else None,
        progress=_progress_mode(raw.get("progress", "auto")),
        budget_usd=_usd(budget, "usd"),
        sweep_budget_usd=_usd(budget, "sweep_usd"),
        force=bool(raw.get("force", False)),
        repeat=_repeat(raw.get("repeat", 0)),
        on_error=_on_error(raw.get("on_error", "fail")),
        resolved=raw,
        panel=panel,
        overrides=tuple(overrides),
        plugins=plugins,
        unasked=unasked,
    )


ON_ERROR_MODES = ("fail", "continue")
"""``on_error``'s values: stop the job at the first failed document, or finish the others."""


def _on_error(value: Any) -> str:
    if value not in ON_ERROR_MODES:
        raise ConfigError(
            f"on_error={value} must be fail (stop the job) or continue (finish the other documents)"
        )
    return str(value)


def _repeat(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(
            f"repeat={value} must be a whole number >= 0; sweep it with -m repeat='range(3)'"
        )
    return value


def _usd(budget: dict[str, Any], key: str) -> float | None:
    value = budget.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(
            f"budget.{key}={value} must be a number of US dollars > 0 "
            f"(a budget of 0 allows no call), e.g. budget.{key}=5; budget.{key}=null means no limit"
        )
    return float(value)


PROGRESS_MODES = ("bar", "lines", "off")
"""How a job shows its progress (``runner/run/progress.py``); ``progress=auto`` picks one."""


def _progress_mode(value: Any) -> str:
    """auto: a bar on a terminal, one line per document in a log; true = bar; false = off."""
    if value == "auto":
        return "bar" if sys.stderr.isatty() else "lines"
    if isinstance(value, bool):
        return "bar" if value else "off"
    if value in PROGRESS_MODES:
        return str(value)
    *most, last = PROGRESS_MODES
    raise ConfigError(
        f"progress={value} is not a progress mode; use auto, {', '.join(most)} or {last}"
        " (true/false)"
    )


def default_cache_dir() -> str:
    """The gateway's response cache: ./.cache/llm of the current folder."""
    return str(Path.cwd() / ".cache" / "llm")
