"""What a job writes to its MLflow run before any work: params, tags, config and prompts.

Split from ``runner.run.recording`` (the outcomes, after the work): this module names the
run's params (the roles, the strategy's settings, every swept key), its provenance tags
(git commit, package versions) and its dataset input; ``Tracker`` is the only thing it talks to.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from runner.config.fingerprint import experiment_config, file_digest
from runner.config.overrides import parse_all
from runner.config.run_config import PROJECT_ROOT
from runner.plugins.identity import described, identities
from runner.run.prepare import Job
from runner.tracking.secrets import redacted_data
from runner.tracking.tags import INPUTS_TAG
from runner.tracking.writer import Tracker

VERSIONED = (
    "summarization-runner",
    "litellm",
    "mlflow",
    "hydra-core",
    "tiktoken",
    "nltk",
    "llama-cpp-python",
)


def git_commit() -> str | None:
    """The checkout's commit, with '-dirty' when it has uncommitted changes; None outside git.

    Only when this package's own source is tracked by the repository around it: an
    installed wheel (whose site-packages may sit inside some other repository, say a
    project's .venv) has no commit, and neither does the folder the run is started from.
    """
    try:
        _git("ls-files", "--error-unmatch", "--", "runner/__init__.py")
        sha = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        return f"{sha}-dirty" if dirty else sha
    except (OSError, subprocess.CalledProcessError):
        return None


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def role_params(job: Job) -> dict[str, Any]:
    """``<role>``, ``<role>.model``, ``<role>.temperature`` for every role the job uses.

    And ``judge.samples`` when the judge is sampled (the report's clusters read it).
    """
    out: dict[str, Any] = {}
    for role, gateway in job.roles.items():
        out[role] = gateway.name
        out[f"{role}.model"] = gateway.spec.model
        out[f"{role}.temperature"] = gateway.temperature
        if gateway.spec.samples > 1:  # one sample: no param, as before samples existed
            out[f"{role}.samples"] = gateway.spec.samples
    return out


def log_setup(tracker: Tracker, job: Job) -> dict[str, str]:
    """Params, tags and the config/prompt artifacts, before any work is done; the params logged."""
    config = job.config
    params: dict[str, Any] = {
        "strategy": config.strategy,
        "roles": ",".join(job.roles) or "none",
        "data": config.data.source,
        "chunk": config.chunk,
        "seed": config.seed,
        "metrics": ",".join(config.metrics) or "none",
    }
    params.update(role_params(job))
    if config.panel:  # judges=: each member is a role judge:<alias> above
        params["judges"] = ",".join(config.panel)
    if "model" in job.roles:
        params["context_window"] = job.roles["model"].context_window
    params.update({f"strategy.{k}": v for k, v in config.strategy_params.items()})
    for label, metric in job.metrics.items():  # what setup settled (e.g. a derived default)
        params.update({f"metrics.{label}.{k}": v for k, v in metric.run_params.items()})
    for key, value in _swept(config.overrides).items():
        params.setdefault(key, value)  # the effective value wins over the override's text
    logged = tracker.log_params(params)
    tags = {
        "overrides": " ".join(config.overrides) or "(none)",
        "python": platform.python_version(),
    }
    commit = git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    tags.update({f"version.{name}": _version(name) for name in VERSIONED})
    tags.update({f"plugin.{key}": text for key, text in described(config.plugins).items()})
    inputs = fingerprint_inputs(job)
    if inputs:  # '' only when even the short form exceeds a tag: the report says "changed"
        tags[INPUTS_TAG] = inputs
    tracker.set_tags(tags)
    # Its URIs without their user and password (tracking.uri, api_base): the connection keeps them.
    resolved = redacted_data(config.resolved)
    tracker.log_text(yaml.safe_dump(resolved, sort_keys=False), "config.yaml")
    log_dataset(tracker, job)
    for artifact, path in job.prompts.items():
        tracker.log_file(path, artifact.rsplit("/", 1)[0])
    return logged


TAG_LIMIT = 5000  # MLflow's smallest limit on a tag value across its stores


def fingerprint_inputs(job: Job) -> str:
    """JSON of the fingerprint's inputs as short digests: config parts, prompts, plugins.

    ``config``: a digest per ``<key>`` or ``<key>.<subkey>`` of the hashed config (so a
    changed ``data.limit`` is named); ``prompts``: per prompt artifact; ``plugins``: each
    non-built-in plugin's target, distribution, version, source digest and file. What is too
    large for one tag is coarsened (a digest per top-level config key, then one of all
    prompts), else left out ('').
    """
    core = experiment_config(job.config)
    inputs: dict[str, Any] = {
        "config": _part_digests(core, deep=True),
        "prompts": {label: file_digest(path)[:12] for label, path in sorted(job.prompts.items())},
        "plugins": {
            key: {**found, "sha256": (found["sha256"] or "")[:12], "file": _file(job, key)}
            for key, found in identities(job.config.plugins).items()
        },
    }
    text = json.dumps(inputs, sort_keys=True)
    if len(text) > TAG_LIMIT:
        inputs["config"] = _part_digests(core, deep=False)
        text = json.dumps(inputs, sort_keys=True)
    if len(text) > TAG_LIMIT:  # hundreds of prompt files: one digest of them all
        inputs["prompts"] = {"(all prompt files)": _digest(inputs["prompts"])}
        text = json.dumps(inputs, sort_keys=True)
    return text if len(text) <= TAG_LIMIT else ""


def _part_digests(core: dict[str, Any], *, deep: bool) -> dict[str, str]:
    """Key -> 8 hex of its value's JSON; with ``deep``, a dict's keys one level down too."""
    out = {}
    for key, value in core.items():
        if deep and isinstance(value, dict) and value:
            out.update({f"{key}.{k}": _digest(v) for k, v in value.items()})
        else:
            out[key] = _digest(value)
    return out


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def _file(job: Job, key: str) -> str | None:
    file = job.config.plugins[key].file
    return str(file) if file else None


def _swept(overrides: tuple[str, ...]) -> dict[str, str]:
    """Every override of the experiment as a param, so sweeps line up as columns in the UI."""
    return {o.key: o.value for o in parse_all(overrides) if o.experiment}


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def log_dataset(tracker: Tracker, job: Job) -> None:
    """The documents as the run's MLflow dataset: name, source and a digest of the texts."""
    data = job.config.data
    digest = hashlib.sha256()
    for item in job.items:
        for part in (item.doc_id, item.source.text if item.source else "", item.summary or ""):
            digest.update(part.encode("utf-8") + b"\0")
        if item.extras:  # given claims are data too; items without extras digest as before
            extras = json.dumps(item.extras, sort_keys=True, default=list)
            digest.update(extras.encode("utf-8") + b"\0")
    source = (
        data.path or data.name or ("runner/sample_data" if data.source == "sample" else data.source)
    )
    name = data.source if data.source == "sample" else f"{data.source}:{Path(str(source)).name}"
    tracker.log_dataset(name, digest.hexdigest()[:16], str(source), len(job.items))
