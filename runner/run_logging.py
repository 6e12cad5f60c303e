"""What a job writes to its MLflow run: setup before work, outcomes after.

Kept out of experiment.py so orchestration stays short; this module decides names and
shapes of params, metrics and artifacts, and ``Tracker`` is the only thing it talks to.
"""

from __future__ import annotations

import math
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from runner.call_log import CallTotals
from runner.config import PROJECT_ROOT, RunConfig, fingerprint
from runner.llm import Gateway
from runner.tracking import Tracker
from strategies.prompting import file_digest

if TYPE_CHECKING:
    from runner.experiment import DocumentOutcome

VERSIONED = ("litellm", "mlflow", "hydra-core", "tiktoken", "nltk", "llama-cpp-python")


def git_commit() -> str:
    """The checkout's commit, with '-dirty' when it has uncommitted changes."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=PROJECT_ROOT, capture_output=True, text=True, check=True,
        ).stdout.strip()
        return f"{sha}-dirty" if dirty else sha
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def prompt_files(config: RunConfig) -> list[Path]:
    """The prompt files this job's strategy and metrics can read."""
    strategy_prompts = PROJECT_ROOT / "strategies" / "prompts"
    folders = [strategy_prompts / config.strategy, strategy_prompts / "common"]
    folders += [PROJECT_ROOT / "metrics" / "prompts" / name for name in config.metrics]
    return sorted(p for folder in folders if folder.is_dir() for p in folder.rglob("*.txt"))


def log_setup(tracker: Tracker, config: RunConfig, model: Gateway, judge: Gateway | None) -> None:
    """Params, tags and the config/prompt artifacts, before any work is done."""
    prompts = prompt_files(config)
    digests = {str(p.relative_to(PROJECT_ROOT)): file_digest(p) for p in prompts}
    params: dict[str, Any] = {
        "strategy": config.strategy,
        "model": config.model.name,
        "model_id": config.model.model,
        "judge": config.judge.name if judge else "none",
        "judge_id": config.judge.model if judge else "none",
        "data": config.data.source,
        "chunk": config.chunk,
        "temperature": model.temperature,
        "seed": config.seed,
        "metrics": ",".join(config.metrics) or "none",
        "context_window": model.context_window,
    }
    params.update({f"strategy.{k}": v for k, v in config.strategy_params.items()})
    params.update(_swept(config.overrides))
    tracker.log_params(params)
    tags = {
        "mlflow.source.git.commit": git_commit(),
        "fingerprint": fingerprint(config, digests),
        "overrides": " ".join(config.overrides) or "(none)",
        "python": platform.python_version(),
    }
    tags.update({f"version.{name}": _version(name) for name in VERSIONED})
    tracker.set_tags(tags)
    tracker.log_text(yaml.safe_dump(config.resolved, sort_keys=False), "config.yaml")
    for path in prompts:
        tracker.log_file(path, str(path.parent.relative_to(PROJECT_ROOT)))


def _swept(overrides: tuple[str, ...]) -> dict[str, str]:
    """Every key=value override as a param, so sweeps line up as columns in the UI."""
    out = {}
    for item in overrides:
        key, _, value = item.lstrip("+~").partition("=")
        if not key.startswith("hydra."):
            out[key] = value
    return out


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def log_outcomes(
    tracker: Tracker, outcomes: list[DocumentOutcome], totals: CallTotals, wall_s: float
) -> dict[str, float]:
    """Per-document and system metrics, summaries, traces and metric artifacts."""
    per_doc: dict[str, dict[str, float]] = {}
    merged: dict[str, dict[str, Any]] = {}
    notes: dict[str, list[str]] = {}
    for o in outcomes:
        values = {f"strategy/{k}": float(v) for k, v in o.result.counters.items()}
        for metric, scored in o.scores.items():
            values.update({f"{metric}/{k}": float(v) for k, v in scored.values.items()})
            for file, content in scored.artifacts.items():
                merged.setdefault(file, {})[o.doc_id] = content
            notes.setdefault(o.doc_id, []).extend(scored.notes)
        per_doc[o.doc_id] = values
    system = _means(per_doc)
    system.update(
        {
            "documents": float(len(outcomes)),
            "calls": float(totals.calls),
            "cache_hits": float(totals.cache_hits),
            "prompt_tokens": float(totals.prompt_tokens),
            "completion_tokens": float(totals.completion_tokens),
            "cached_prompt_tokens": float(totals.cached_prompt_tokens),
            "cost_usd": totals.cost_usd,
            "wall_time_s": wall_s,
        }
    )
    tracker.log_metrics(system)
    for doc_id, values in per_doc.items():
        tracker.log_metrics({f"doc/{doc_id}/{k}": v for k, v in values.items()})
    tracker.log_json({o.doc_id: o.result.summary for o in outcomes}, "summaries.json")
    tracker.log_json(per_doc, "scores.json")
    for o in outcomes:
        trace = [{"kind": s.kind, "call_id": s.call_id, **s.detail} for s in o.result.trace]
        tracker.log_json(trace, f"traces/{o.doc_id}.json")
    for file, content in merged.items():
        tracker.log_json(content, file)
    if any(notes.values()):
        tracker.log_json({k: v for k, v in notes.items() if v}, "notes.json")
    return system


def _means(per_doc: dict[str, dict[str, float]]) -> dict[str, float]:
    """Mean of each value over the documents that have a finite one."""
    keys = sorted({k for values in per_doc.values() for k in values})
    out = {}
    for key in keys:
        finite = [v[key] for v in per_doc.values() if key in v and not math.isnan(v[key])]
        out[key] = sum(finite) / len(finite) if finite else math.nan
    return out
