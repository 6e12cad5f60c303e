"""Typed, validated run configuration built from Hydra's composed config.

Only ``runner/__main__.py`` sees a ``DictConfig``; it hands the plain container here.
Validation happens before any model is loaded or run created, and each failure is a
``ConfigError`` naming the key and a valid choice.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from collections.abc import Callable

from metrics import METRICS
from runner.errors import ConfigError
from runner.llm import ModelSpec
from runner.retry import RetryPolicy
from strategies import STRATEGIES

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Keys that say where results go, not what the experiment is: left out of the fingerprint.
NON_EXPERIMENT_KEYS = ("tracking", "cache", "progress", "hydra")
# Keyword parameters the runner fills itself; not settable from YAML.
RUNNER_SUPPLIED = frozenset({"doc_id"})


@dataclass(frozen=True)
class DataConfig:
    """Where the documents come from."""

    source: str
    """'sample', 'dir', 'booookscore_pickle' or 'none'."""
    path: str | None = None
    """Folder or file for 'dir' and 'booookscore_pickle'."""
    limit: int | None = None
    """Use only the first N documents."""


@dataclass(frozen=True)
class RunConfig:
    """Everything one job needs, validated."""

    strategy: str
    """Registered strategy name."""
    strategy_params: dict[str, Any]
    """Keyword parameters of the strategy function."""
    model: ModelSpec
    """The summarizer."""
    judge: ModelSpec
    """The model that scores (metrics that need one)."""
    data: DataConfig
    """The documents."""
    metrics: dict[str, dict[str, Any]]
    """Metric name -> keyword parameters."""
    chunk: int
    """Tokens per chunk."""
    temperature: float | None
    """Summarizer temperature override."""
    seed: int | None
    """Seed passed to every model that accepts one."""
    tracking_uri: str
    """MLflow tracking URI."""
    experiment: str
    """MLflow experiment name."""
    cache_dir: str | None
    """Response cache folder (None = disabled)."""
    progress: bool
    """Show progress bars."""
    resolved: dict[str, Any] = field(default_factory=dict)
    """The full resolved config, logged as config.yaml."""
    overrides: tuple[str, ...] = ()
    """Hydra overrides of this job; they name the MLflow run."""


def _check_params(kind: str, name: str, fn: Callable[..., Any], params: dict[str, Any]) -> None:
    accepted = {
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind == p.KEYWORD_ONLY and p.name not in RUNNER_SUPPLIED
    }
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ConfigError(
            f"{kind}.{unknown[0]} is not a parameter of {kind} {name!r}; "
            f"valid keys: {', '.join(sorted(accepted)) or 'none'}"
        )


def model_spec(raw: dict[str, Any], role: str) -> ModelSpec:
    """A ModelSpec from a model/judge config block, rejecting unknown keys."""
    raw = dict(raw)
    known = {f.name for f in fields(ModelSpec)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{role}.{unknown[0]} is not a model setting; valid: {', '.join(sorted(known))}")
    if not raw.get("model"):
        raise ConfigError(f"{role}.model is empty; give a litellm model string, e.g. openai/gpt-4o")
    raw["retry"] = RetryPolicy(**(raw.get("retry") or {}))
    return ModelSpec(**{k: v for k, v in raw.items() if v is not None})


def _pick(kind: str, registry: dict[str, Any], name: Any) -> Callable[..., Any]:
    if name not in registry:
        raise ConfigError(
            f"{kind}={name} is unknown; available: {', '.join(sorted(registry))}"
        )
    return registry[name]  # type: ignore[no-any-return]


def build_run_config(raw: dict[str, Any], overrides: tuple[str, ...] = ()) -> RunConfig:
    """Validate the composed config (a plain dict) into a RunConfig."""
    strategy_raw = dict(raw.get("strategy") or {})
    name = strategy_raw.pop("name", None)
    _check_params("strategy", str(name), _pick("strategy", STRATEGIES, name), strategy_raw)
    metrics = {k: dict(v or {}) for k, v in (raw.get("metrics") or {}).items()}
    for metric, params in metrics.items():
        _check_params(f"metrics.{metric}", metric, _pick("metrics", METRICS, metric), params)
    chunk = raw.get("chunk")
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk <= 0:
        raise ConfigError(f"chunk={chunk} must be a positive whole number of tokens; try chunk=2048")
    temperature = raw.get("temperature")
    if temperature is not None and not (0.0 <= float(temperature) <= 2.0):
        raise ConfigError(f"temperature={temperature} is outside 0..2; try temperature=0.5")
    tracking = raw.get("tracking") or {}
    cache = raw.get("cache") or {}
    progress = raw.get("progress", "auto")
    return RunConfig(
        strategy=str(name),
        strategy_params=strategy_raw,
        model=model_spec(raw["model"], "model"),
        judge=model_spec(raw["judge"], "judge"),
        data=DataConfig(**(raw.get("data") or {"source": "none"})),
        metrics=metrics,
        chunk=chunk,
        temperature=None if temperature is None else float(temperature),
        seed=raw.get("seed"),
        tracking_uri=tracking.get("uri") or default_tracking_uri(),
        experiment=str(tracking.get("experiment") or "summarization"),
        cache_dir=(cache.get("dir") or str(PROJECT_ROOT / ".cache" / "llm"))
        if cache.get("enabled", True)
        else None,
        progress=_progress_flag(progress),
        resolved=raw,
        overrides=tuple(overrides),
    )


def _progress_flag(value: Any) -> bool:
    import sys

    if value == "auto":
        return sys.stderr.isatty()
    return bool(value)


def default_tracking_uri() -> str:
    """sqlite store under the repo's mlruns/ (MLflow 3.13+ refuses a plain file store)."""
    return f"sqlite:///{PROJECT_ROOT / 'mlruns' / 'mlflow.db'}"


def fingerprint(config: RunConfig, prompt_digests: dict[str, str]) -> str:
    """Identity of the experiment: resolved config minus output settings, plus prompt hashes."""
    core = {k: v for k, v in config.resolved.items() if k not in NON_EXPERIMENT_KEYS}
    blob = json.dumps({"config": core, "prompts": prompt_digests}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
