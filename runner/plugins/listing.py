"""The strategies, metrics and data loaders available now, for ``python -m runner --help``.

Read from entry-point metadata only: listing them imports none (``--help`` stays fast), and
a plugin that fails to import is reported when a job names it, not here.
"""

from __future__ import annotations

from itertools import groupby

from runner.plugins.errors import PluginError
from runner.plugins.registry import Plugin, available

HEADER = """== Strategies, metrics and data loaders ==
Built-in, or from an installed package (entry points); your own also by import path in YAML
(name: my_pkg.my_strategy) or as <name>.py in this folder (strategy=<name>).
"""


def listing() -> str:
    """One line per kind: each name with where it comes from."""
    lines = [HEADER]
    for kind in ("strategy", "metrics", "data"):
        try:
            plugins = sorted(available(kind).values(), key=lambda p: (not p.built_in, p.origin))
        except PluginError as err:
            lines.append(f"{kind}: error: {err}")
            continue
        parts = [
            f"{', '.join(sorted(p.name for p in group))} ({origin})"
            for origin, group in groupby(plugins, key=_origin)
        ]
        lines.append(f"{kind}: {'; '.join(parts)}")
    return "\n".join(lines) + "\n"


def _origin(plugin: Plugin) -> str:
    return plugin.origin
