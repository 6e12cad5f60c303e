"""estimate=true counts a plugin strategy's calls through its own ``estimate`` hook.

A loose-module strategy in the study folder with the hook is counted as the hook says (the
test computes the figures itself from the document's chunks); one without the hook is
estimated as unknown, with a note naming the hook, and the command still succeeds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runner.api.chunking import split_into_chunks
from runner.config.run_config import build_run_config
from runner.estimate import command
from runner.estimate.history import history
from runner.plugins.registry import load
from tests.runner.config.test_config import composed
from tests.runner.estimate.test_estimate import STORY

REPO = Path(__file__).resolve().parents[3]
CHUNK = 1024
OVERHEAD, ANSWER = 11, 17
"""The hooked strategy's prompt tokens around each chunk and its answer's tokens."""

HOOKED = f"""
from runner.api import Phase, StrategyResult

ROLES = ("model",)
IGNORES = {{}}
PROMPT_DIRS = ()


def summarize(chunks, model, *, rounds=2):
    return StrategyResult(summary="")


def estimate(chunks, model, *, window, prompt, rounds=2):
    n = len(chunks) * rounds
    tokens = sum(c.n_tokens for c in chunks) * rounds
    return [Phase("model", "hooked/step", n, tokens + n * {OVERHEAD}, n * {ANSWER}, n)]
"""

UNHOOKED = """
from runner.api import StrategyResult

ROLES = ("model",)
IGNORES = {}
PROMPT_DIRS = ()


def summarize(chunks, model):
    return StrategyResult(summary="")
"""


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A study folder (the current folder) with both strategies and one book."""
    monkeypatch.chdir(tmp_path)
    for name, source in (("hooked", HOOKED), ("unhooked", UNHOOKED)):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
        monkeypatch.delitem(sys.modules, name, raising=False)
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "story.txt").write_text(STORY, encoding="utf-8")
    load.cache_clear()
    return tmp_path


def _overrides(strategy: str, *more: str) -> list[str]:
    return [
        "strategy=none",
        f"strategy.name={strategy}",
        "data=dir",
        "data.path=books",
        f"chunk={CHUNK}",
        "metrics=none",
        "model=claude",
        *more,
    ]


def _estimate(items: list[str]) -> Any:
    history.cache_clear()
    command._READ.clear()
    return command.estimate(build_run_config(composed(*items), tuple(items)), "cell")


def test_a_plugin_strategy_is_counted_through_its_estimate_hook(study: Path) -> None:
    chunks = split_into_chunks(STORY, CHUNK)
    assert len(chunks) > 1
    calls = len(chunks) * 3
    prompt = sum(c.n_tokens for c in chunks) * 3 + calls * OVERHEAD

    cell = _estimate(_overrides("hooked", "+strategy.rounds=3"))

    assert (cell.calls, cell.prompt_tokens, cell.completion_tokens) == (
        calls,
        prompt,
        calls * ANSWER,
    )
    assert not [n for n in cell.notes if "unknown" in n] and cell.unknown == ()


def test_a_plugin_strategy_without_the_hook_is_noted_as_unknown(study: Path) -> None:
    cell = _estimate(_overrides("unhooked"))
    assert cell.calls == 0
    assert any("strategy unhooked" in n and "unknown" in n and "estimate(" in n for n in cell.notes)

    done = subprocess.run(
        [sys.executable, "-m", "runner", *_overrides("unhooked"), "estimate=true"],
        capture_output=True,
        text=True,
        cwd=study,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    note = next(line for line in done.stdout.splitlines() if "strategy unhooked:" in line)
    assert "unknown" in note and "estimate(chunks" in note
    # never a silent zero: the cell's and the total's figures read as lower bounds
    rows = [line for line in done.stdout.splitlines() if line.startswith(("strategy=", "total"))]
    assert len(rows) == 2 and all(line.split()[-4].endswith("+?") for line in rows), rows
    assert "+?: at least this much; not counted: the calls of strategy unhooked" in done.stdout
