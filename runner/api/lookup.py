"""Another plugin, by the name a config gives it, found as the job finds its own.

A strategy built on another (SummIt drafts with ``strategy.draft=hier``, or a researcher's
``lead``) asks for it by name rather than importing it, so any strategy the registry knows
can be the one: a built-in, an installed package's, or a loose module of the current folder.
The registry is imported when asked, not with the plugin API: a plugin importing
``runner.api`` still pulls in nothing else of ``runner``. A plugin that takes another's name
as a parameter declares it (``PLUGIN_PARAMS = {"draft": "strategy"}``), so the job checks
the name before it starts and the other plugin's identity and prompts enter the fingerprint.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Literal, get_args

Kind = Literal["strategy", "metrics", "data"]
"""What ``plugin`` finds: strategies, metrics, data loaders (the config groups' names), so
mypy refuses ``plugin("metric", ...)``."""
KINDS: tuple[str, ...] = get_args(Kind)


def plugin(kind: Kind, name: str) -> ModuleType:
    """The module of the ``kind`` plugin named ``name``, its contract checked.

    An unknown name, or a plugin that breaks its contract, is a one-line ``ConfigError``
    naming what is available.
    """
    if kind not in KINDS:
        raise ValueError(f"plugin kind {kind!r}: one of {', '.join(KINDS)}")
    registry = importlib.import_module("runner.plugins.registry")
    found: ModuleType = registry.load(registry.find(kind, name))
    return found
