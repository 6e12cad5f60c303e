"""Strategies and metrics declare what the orchestrator uses; it never probes for attributes.

A strategy declares ``ROLES``, ``IGNORES`` (set keys it does not read, with why) and
``PROMPT_DIRS`` (its prompt folders, hashed into the fingerprint), and has ``summarize``; a
metric declares ``ROLES`` and ``PROMPT_DIRS`` and has ``setup``. A module that forgot one
would otherwise be read with a silent default (no ignored-key note, prompts not fingerprinted).
"""

from __future__ import annotations

from types import ModuleType

import pytest

from runner.plugins.identity import prompt_folders
from strategies import PROMPT_ROOT as STRATEGY_PROMPTS
from tests.helpers.plugins import built_ins

METRICS = built_ins("metrics")
STRATEGIES = built_ins("strategy")


def _declares(module: ModuleType, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n not in vars(module)]


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_declares_its_contract(name: str) -> None:
    module = STRATEGIES[name]
    assert _declares(module, ("ROLES", "IGNORES", "PROMPT_DIRS", "summarize")) == []
    assert isinstance(module.IGNORES, dict) and all(
        isinstance(v, str) for v in module.IGNORES.values()
    )
    for folder in module.PROMPT_DIRS:  # a named folder exists, or the strategy has no prompts
        assert (STRATEGY_PROMPTS / folder).is_dir() or name == "none", (name, folder)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_metric_declares_its_contract(name: str) -> None:
    module = METRICS[name]
    assert _declares(module, ("ROLES", "PROMPT_DIRS", "setup")) == []
    # where the runner finds them: metrics/prompts/, or a package's PROMPT_ROOT
    has_prompts = [folder for folder in prompt_folders(module).values() if folder.is_dir()]
    judged = "judge" in module.ROLES
    assert has_prompts or not judged, f"{name} asks a judge but names no prompt folder"


def test_the_check_finds_a_missing_declaration() -> None:
    bare = ModuleType("bare")
    assert _declares(bare, ("ROLES", "IGNORES")) == ["ROLES", "IGNORES"]
