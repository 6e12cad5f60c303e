"""The strategies, metrics and data loaders available now, for ``python -m runner --help``.

Entry points are read from metadata and loose modules (``<name>.py`` in the folder the runner
starts in, as ``registry.find`` looks for them) from their source with ``ast``: listing imports
no plugin (``--help`` stays fast and runs no user code), and a plugin that fails to import is
reported when a job names it, not here. A loose module's kind is what it declares: a
strategy defines ``summarize``, a metric ``setup``, a data loader ``load`` and ``KEYS``.

The runner finds loose modules in the folder it starts in only, never in ``--config-dir``
(that folder holds YAML): plugin files there are named as not found, with the way out.
"""

from __future__ import annotations

import ast
from itertools import groupby
from pathlib import Path

from runner.plugins.contract import required_names
from runner.plugins.errors import PluginError
from runner.plugins.registry import Plugin, available, loose_file

KINDS = ("strategy", "metrics", "data")
HEADER = """== Strategies, metrics and data loaders ==
Built-in, or from an installed package (entry points); your own also by import path in YAML
(name: my_pkg.my_strategy), or as a module file <name>.py in the folder you run from
(name: <name> in its YAML in --config-dir, or strategy.name=<name>).
"""
LARGEST = 1_000_000
"""Bytes: a bigger .py file is not read (a plugin is small; --help stays fast)."""


def listing(here: Path | None = None, config_dir: Path | None = None) -> str:
    """One line per kind: each name with where it comes from.

    ``here``: the folder the runner starts in, whose loose modules are listed (None: none).
    ``config_dir``: the ``--config-dir``, whose plugin files are named as not found.
    """
    lines = [HEADER]
    loose = loose_modules(here) if here is not None else {}
    for kind in KINDS:
        try:
            entries = available(kind)
        except PluginError as err:
            lines.append(f"{kind}: error: {err}")
            continue
        mine = [p for p in loose.get(kind, []) if p.name not in entries]
        plugins = sorted(entries.values(), key=lambda p: (not p.built_in, p.origin)) + mine
        parts = [
            f"{', '.join(sorted(p.name for p in group))} ({origin})"
            for origin, group in groupby(plugins, key=_origin)
        ]
        lines.append(f"{kind}: {'; '.join(parts)}")
        lines += [
            f"  {p.file} clashes with {kind}={p.name} ({entries[p.name].origin}): rename it"
            for p in loose.get(kind, [])
            if p.name in entries
        ]
    if config_dir is not None and here is not None:
        lines += _not_found(config_dir, here)
    return "\n".join(lines) + "\n"


def loose_modules(folder: Path) -> dict[str, list[Plugin]]:
    """Kind -> the loose modules of ``folder`` that declare that kind (none imported)."""
    found: dict[str, list[Plugin]] = {kind: [] for kind in KINDS}
    if not folder.is_dir():
        return found
    for candidate in sorted(folder.glob("*.py")):
        file = loose_file(candidate.stem, folder)  # the rule a job finds it by
        if file is None:
            continue
        for kind in kinds_of(file):
            found[kind].append(Plugin(kind, file.stem, file.stem, file=file))
    return found


def kinds_of(file: Path) -> list[str]:
    """The kinds ``file`` declares, read from its source; [] for any other module.

    A kind counts when the module defines its entry function and at least one name the
    contract asks for beside it (a helper module with a ``load`` function is no data loader);
    what else is missing the job's contract check names when the module is used.
    """
    try:
        if file.stat().st_size > LARGEST:
            return []
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []  # named by a job, it is one line saying why it cannot be imported
    names = top_level_names(tree.body)
    kinds = []
    for kind in KINDS:
        declared, entry = required_names(kind)
        if entry in names and any(n in names for n in declared):
            kinds.append(kind)
    return kinds


def top_level_names(body: list[ast.stmt]) -> set[str]:
    """The names a module's top level binds (inside ``if`` and ``try`` too, not in functions)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, (ast.If, ast.Try)):
            names |= top_level_names(node.body + node.orelse)
            names |= top_level_names([s for h in getattr(node, "handlers", []) for s in h.body])
            names |= top_level_names(getattr(node, "finalbody", []))
    return names


def _not_found(config_dir: Path, here: Path) -> list[str]:
    """The plugin files of ``--config-dir``, which the runner does not read, and the way out."""
    if not config_dir.is_dir() or config_dir.resolve() == here.resolve():
        return []
    loose = loose_modules(config_dir)
    files = sorted({p.file.name for group in loose.values() for p in group if p.file})
    if not files:
        return []
    return [
        f"not found: {', '.join(files)} in --config-dir {config_dir}: the runner reads "
        f"<name>.py from the folder it starts in ({here}), not from --config-dir; move them "
        "there, or start the runner from their folder"
    ]


def _origin(plugin: Plugin) -> str:
    return plugin.origin
