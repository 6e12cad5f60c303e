"""A job's identity: what decides whether a finished run can stand for a new one.

The fingerprint hashes the resolved config minus what cannot change a result (where
results go, progress display, and per-model concurrency, timeouts and retry policy), the
blocks of the model roles the job actually uses, and the SHA-256 of every prompt file it
can read: the strategy's and metrics' prompt folders, and any file a ``*prompt_path``
parameter names, wherever it lives, or a parameter the plugin lists in ``FILE_PARAMS``
(G-Eval's ``steps``, ``metrics=given``'s ``path``: a rater's outputs) when its value names
a file. A changed prompt (or file of values) is a changed
experiment. A strategy or metric from outside this package adds its identity (distribution
and version, and its source file's SHA-256: ``runner/plugins/identity.py``), so an edited
plugin is a changed experiment too.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from runner.api.errors import ConfigError
from runner.config.overrides import NON_EXPERIMENT_KEYS
from runner.config.run_config import ALL_ROLES, RunConfig
from runner.llm.spec import NOT_IN_FINGERPRINT
from runner.plugins.identity import identities, prompt_folders
from runner.plugins.registry import load


def prompt_files(config: RunConfig) -> dict[str, Path]:
    """Artifact path -> file, for every prompt file this job's strategy and metrics can read."""
    folders = prompt_folders(config.strategy_module)  # each declares its own folders
    for label in config.metrics:  # (f1, built from others, names theirs)
        folders.update(prompt_folders(config.metric_module(label)))
    seen = {folder.resolve() for folder in folders.values()}
    for plugin in config.named_plugins.values():  # SummIt's draft: once, if not already there
        for label, folder in prompt_folders(load(plugin)).items():
            if folder.resolve() not in seen:
                folders[label] = folder
                seen.add(folder.resolve())
    files = {
        f"{label}/{p.relative_to(folder).as_posix()}": p
        for label, folder in folders.items()
        if folder.is_dir()
        for p in sorted(folder.rglob("*.txt"))
    }
    for key, value in _prompt_path_params(config):
        path = Path(str(value)).expanduser()
        if not path.is_file():
            raise ConfigError(f"{key}={value} does not exist; give an existing file")
        files[f"prompts/{key}/{path.name}"] = path.resolve()
    return files


def _prompt_path_params(config: RunConfig) -> list[tuple[str, Any]]:
    """(config key, value) of every set parameter naming a file the job reads.

    Every ``*prompt_path`` (a missing file is an error here), and each parameter a plugin
    lists in ``FILE_PARAMS`` whose value names a file: so a changed file is a changed
    experiment, as a changed prompt is. A value that names no file (G-Eval's ``official``,
    a folder, a missing file) is left to the plugin, which names its own fix.
    """
    found = [
        ("strategy", k, v, _file_params(config.strategy_module))
        for k, v in config.strategy_params.items()
    ]
    found += [
        ("metrics." + m, k, v, _file_params(config.metric_module(m)))
        for m, params in config.metrics.items()
        for k, v in params.items()
    ]
    prompts = [(f"{at}.{k}", v) for at, k, v, _ in found if v and k.endswith("prompt_path")]
    named = [
        (f"{at}.{k}", v)
        for at, k, v, listed in found
        if v and k in listed and not k.endswith("prompt_path") and _is_file(v)
    ]
    return prompts + named


def _file_params(module: Any) -> tuple[str, ...]:
    """The parameters a plugin declares may name a file it reads (``FILE_PARAMS``)."""
    return tuple(getattr(module, "FILE_PARAMS", ()))


def _is_file(value: Any) -> bool:
    return Path(str(value)).expanduser().is_file()


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def experiment_config(config: RunConfig) -> dict[str, Any]:
    """The part of the resolved config the fingerprint hashes (see the module docstring).

    Public so that a run can record its parts' digests (``runner.run.record_setup``) and a
    report can name which part differs between two versions of one cell.
    """
    core = {
        k: v
        for k, v in config.resolved.items()
        if k not in NON_EXPERIMENT_KEYS and k not in ALL_ROLES
    }
    if core.get("judges") is None:  # no panel: the config as it was before panels
        core.pop("judges", None)
    for role in config.roles:
        block = dict(config.resolved.get(role) or {})
        core[role] = {k: v for k, v in block.items() if k not in NOT_IN_FINGERPRINT}
        if core[role].get("samples") == 1:  # one sample: the judge as it always was
            del core[role]["samples"]
    return core


def fingerprint(config: RunConfig, prompts: dict[str, Path]) -> str:
    """16 hex characters naming the experiment (see the module docstring)."""
    core = experiment_config(config)
    digests = {label: file_digest(path) for label, path in sorted(prompts.items())}
    identity: dict[str, Any] = {"config": core, "prompts": digests}
    plugins = identities(config.plugins)
    if plugins:  # only then, so a run of built-ins keeps the fingerprint it always had
        identity["plugins"] = plugins
    blob = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
