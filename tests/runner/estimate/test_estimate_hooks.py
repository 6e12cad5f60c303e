"""estimate=true counts a plugin strategy's calls through its own ``estimate`` hook.

A loose-module strategy in the study folder with the hook is counted as the hook says (the
test computes the figures itself from the document's chunks), its parameters as the run sets
them or else as ``summarize`` declares them; a hook of the older keyword form is counted the
same, with one deprecation line naming the new form; one without the hook is estimated as
unknown, with a note naming the hook, and the command still succeeds.
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
from runner.api.estimating import takes_one_input
from runner.config.run_config import build_run_config
from runner.estimate import command
from runner.estimate.history import history
from runner.plugins.registry import available, load
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


def estimate(inputs):
    chunks, rounds = inputs.chunks, inputs.params["rounds"]  # no default repeated here
    n = len(chunks) * rounds
    tokens = sum(c.n_tokens for c in chunks) * rounds
    return [Phase("model", "hooked/step", n, tokens + n * {OVERHEAD}, n * {ANSWER}, n)]
"""

OLDER_FORM = f"""
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
    for name, source in (("hooked", HOOKED), ("older", OLDER_FORM), ("unhooked", UNHOOKED)):
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


def _expected(rounds: int) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) of the hooked strategy, counted here."""
    chunks = split_into_chunks(STORY, CHUNK)
    assert len(chunks) > 1
    calls = len(chunks) * rounds
    return calls, sum(c.n_tokens for c in chunks) * rounds + calls * OVERHEAD, calls * ANSWER


def test_a_plugin_strategy_is_counted_through_its_estimate_hook(study: Path) -> None:
    cell = _estimate(_overrides("hooked", "+strategy.rounds=3"))

    assert (cell.calls, cell.prompt_tokens, cell.completion_tokens) == _expected(3)
    assert cell.notes == () and cell.unknown == ()


def test_a_parameter_the_run_leaves_out_reaches_the_hook_as_summarize_declares_it(
    study: Path,
) -> None:
    """The hook repeats no default: ``rounds`` is 2 because ``summarize`` says so."""
    cell = _estimate(_overrides("hooked"))
    assert (cell.calls, cell.prompt_tokens, cell.completion_tokens) == _expected(2)


def test_a_hook_of_the_older_form_is_counted_the_same_with_one_deprecation_line(
    study: Path,
) -> None:
    cell = _estimate(_overrides("older", "+strategy.rounds=3"))
    assert (cell.calls, cell.prompt_tokens, cell.completion_tokens) == _expected(3)
    assert cell.unknown == ()
    (line,) = cell.notes
    assert line.startswith("strategy older: its estimate hook takes the older keyword form")
    assert "estimate(inputs: runner.api.StrategyEstimateInput) -> list[Phase]" in line


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
    assert "unknown" in note and "estimate(inputs: runner.api.StrategyEstimateInput)" in note
    # never a silent zero: the cell's and the total's figures read as lower bounds
    rows = [line for line in done.stdout.splitlines() if line.startswith(("strategy=", "total"))]
    assert len(rows) == 2 and all(line.split()[-4].endswith("+?") for line in rows), rows
    assert "+?: at least this much; not counted: the calls of strategy unhooked" in done.stdout


def test_every_built_in_hook_takes_the_one_input_so_it_repeats_no_default() -> None:
    """The built-ins are written as a researcher's plugin should be: no deprecated form, so
    no hook of theirs copies a default of its ``summarize`` or ``setup``."""
    hooks = {
        f"{kind} {name}": load(plugin).estimate
        for kind in ("strategy", "metrics")
        for name, plugin in available(kind).items()
        if plugin.built_in and hasattr(load(plugin), "estimate")
    }
    assert {"strategy hier", "strategy summit", "metrics booookscore"} <= set(hooks)
    older = [who for who, hook in hooks.items() if not takes_one_input(hook)]
    assert older == []
