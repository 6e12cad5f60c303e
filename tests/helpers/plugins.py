"""Register a strategy or metric module made in a test, the way an installed plugin is found."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest

from runner.plugins.registry import Plugin, available, load


def register(monkeypatch: pytest.MonkeyPatch, kind: str, name: str, module: ModuleType) -> None:
    """Make ``kind=name`` find ``module`` for this test (as an entry point of no package)."""
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(available(kind), name, Plugin(kind, name, name))
    load.cache_clear()


def built_ins(kind: str) -> dict[str, ModuleType]:
    """Name -> module of every built-in strategy or metric (imports them all)."""
    return {name: load(p) for name, p in available(kind).items() if p.built_in}
