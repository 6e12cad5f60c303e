"""Entry points of the plugin groups, read from installed distributions' metadata.

The built-ins are entry points of this package (pyproject.toml). A clone used without
``pip install -e .`` has no metadata, so its own pyproject.toml is read instead: the same
declarations, one source of truth.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

THIS_DISTRIBUTION = "summarization-runner"
GROUPS = {
    "strategy": "summarization_runner.strategies",
    "metrics": "summarization_runner.metrics",
    "data": "summarization_runner.data",
}
"""The config group of each plugin kind -> its entry-point group."""
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@dataclass(frozen=True)
class EntryPoint:
    """One entry point: name, ``module[:attribute]`` and the distribution declaring it."""

    name: str
    value: str
    distribution: str
    version: str | None


def entry_points(group: str) -> list[EntryPoint]:
    """Every entry point of ``group``, the built-ins included.

    They come from pyproject.toml when this package is not installed.
    """
    found = [
        EntryPoint(e.name, e.value, _dist_name(e), e.dist.version if e.dist else None)
        for e in metadata.entry_points(group=group)
    ]
    if not any(e.distribution == THIS_DISTRIBUTION for e in found):
        found += _declared_here(group)
    return found


def _dist_name(entry: metadata.EntryPoint) -> str:
    name = entry.dist.metadata["Name"] if entry.dist else "unknown"
    return str(name).replace("_", "-").lower()


def _declared_here(group: str) -> list[EntryPoint]:
    """This package's entry points of ``group`` as its pyproject.toml declares them."""
    if not PYPROJECT.is_file() or sys.version_info < (3, 11):
        return []
    import tomllib

    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    declared = project.get("entry-points", {}).get(group, {})
    return [
        EntryPoint(name, value, THIS_DISTRIBUTION, project.get("version"))
        for name, value in declared.items()
    ]


def module_distribution(target: str) -> tuple[str | None, str | None]:
    """The installed distribution (and version) whose files hold the module ``target``.

    None for a module that no distribution ships (a folder of the user's on the path).
    """
    top = target.split(".", 1)[0]
    names = metadata.packages_distributions().get(top) or []
    if not names:
        return None, None
    name = str(names[0]).replace("_", "-").lower()
    return name, metadata.version(names[0])
