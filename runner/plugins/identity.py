"""What of a plugin enters a run's fingerprint, params and prompt artifacts.

A built-in's code is the package's own: its identity is implied by the config (as before
plugins existed, so fingerprints of built-in runs are unchanged). Any other plugin adds its
import target, distribution and version, and the SHA-256 of its module's source file: a
loose ``lead_k.py`` has no version, and an editable install keeps its version while its
code changes, so the file's bytes are what tell an edited plugin from the one that ran.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from runner.plugins.registry import Plugin, load


def identities(plugins: Mapping[str, Plugin]) -> dict[str, dict[str, str | None]]:
    """Config key (``strategy``, ``metrics.<label>``) -> identity, for non-built-ins only."""
    return {key: identity(p) for key, p in sorted(plugins.items()) if not p.built_in}


def identity(plugin: Plugin) -> dict[str, str | None]:
    """Import target, distribution, version and the module file's SHA-256."""
    return {
        "target": plugin.target,
        "distribution": plugin.distribution,
        "version": plugin.version,
        "sha256": source_digest(load(plugin)),
    }


def source_digest(module: ModuleType) -> str | None:
    """SHA-256 of the module's source file (None for a module without one)."""
    file = getattr(module, "__file__", None)
    if not file or not Path(file).is_file():
        return None
    return hashlib.sha256(Path(file).read_bytes()).hexdigest()


def described(plugins: Mapping[str, Plugin]) -> dict[str, str]:
    """Config key -> ``target (origin), sha256 <first 12>`` of each non-built-in (run tags)."""
    out = {}
    for key, plugin in sorted(plugins.items()):
        if not plugin.built_in:
            digest = identity(plugin)["sha256"] or "none"
            out[key] = f"{plugin.target} ({plugin.origin}), sha256 {digest[:12]}"
    return out


def prompt_folders(module: ModuleType) -> dict[str, Path]:
    """Artifact label -> folder of each prompt folder a strategy or metric declares.

    A module's folders live under ``prompts/`` beside it, or under the ``PROMPT_ROOT`` it
    declares (a plugin that is a package, such as the built-in ``strategies/summit/``, keeps
    its prompts beside the package); the label starts with the package that holds the
    plugin (``strategies/prompts/hier`` for the built-in hier, as it always was).
    """
    if not module.PROMPT_DIRS:  # nothing to find (a module made in memory has no file)
        return {}
    declared = getattr(module, "PROMPT_ROOT", None)
    root = Path(declared) if declared else Path(str(module.__file__)).parent / "prompts"
    package = module.__name__.rpartition(".")[0] or module.__name__
    return {f"{package}/prompts/{folder}": root / folder for folder in module.PROMPT_DIRS}
