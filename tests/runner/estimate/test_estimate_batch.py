"""estimate=true with provider batches: half the price, and the batch wait instead of latency.

The expected prices are litellm's own (``litellm.model_cost``, through litellm's import, not
the estimate's reading of its price file) and the published 50% batch discount; the tokens
are the estimate's (checked against real jobs in ``test_estimate.py``). The wait is the
published one: about an hour typically, 24 h at most, per batch round.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runner.config.run_config import build_run_config
from runner.estimate import command
from runner.estimate.cell import STARTUP_BOUNDS, STARTUP_S, CellEstimate
from runner.estimate.history import history
from runner.estimate.report import cell_lines
from runner.estimate.span import Span
from runner.plugins.registry import load
from tests.runner.config.test_config import composed
from tests.runner.estimate.test_estimate import STORY, given  # noqa: F401 (a fixture)
from tests.runner.test_app import cli

HOUR, DAY = 3600.0, 86400.0
CLAUDE = "claude-sonnet-4-5-20250929"
"""The model of conf/model/claude.yaml, as litellm's price map names it."""


def batch_on(role: str, alias: str) -> str:
    """The override that sets ``<role>.batch=true`` (appended where the model's YAML has no
    ``batch`` key)."""
    present = "batch" in composed(f"{role}={alias}")[role]
    return f"{'' if present else '+'}{role}.batch=true"


def _estimate(items: list[str]) -> CellEstimate:
    history.cache_clear()
    command._READ.clear()
    return command.estimate(build_run_config(composed(*items), tuple(items)), "cell")


def _role(cell: CellEstimate, role: str) -> tuple[Any, Span]:
    """The role's figures and span in ``cell``."""
    (index,) = [i for i, r in enumerate(cell.roles) if r.role == role]
    return cell.roles[index], cell.role_spans[index]


def _online(prompt: float, completion: float) -> float:
    """USD of Claude's tokens at litellm's online prices (read by litellm itself)."""
    import litellm

    entry = litellm.model_cost[CLAUDE]
    return float(
        prompt * entry["input_cost_per_token"] + completion * entry["output_cost_per_token"]
    )


def _judged(summaries: Path, tmp_path: Path, *more: str) -> list[str]:
    """BooookScore over given summaries, judged by Claude (no key needed to estimate)."""
    return [
        "strategy=none",
        "data=summaries",
        f"data.path={summaries}",
        "metrics=booookscore",
        "judge=claude",
        f"tracking.uri=sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
        f"cache.dir={tmp_path / 'cache'}",
        *more,
    ]


def test_a_batched_judge_costs_half_its_online_price_and_waits_for_its_batch(
    given: Path,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    items = _judged(given, tmp_path, batch_on("judge", "claude"))
    cell = _estimate(items)
    judge, span = _role(cell, "judge")
    assert judge.spec.batch and judge.can_batch
    for end in (span.low, span.high):
        online = _online(end.prompt_tokens, end.completion_tokens)
        assert online > 0
        assert end.online_usd == pytest.approx(online, rel=1e-12)
        assert end.batch_usd == pytest.approx(online / 2, rel=1e-12)
        assert end.cost_usd == end.batch_usd  # what the job pays: the batch price
    assert cell.batch_rounds == (("judge", 1),)

    # the wall time is the batch wait (1 h typical .. 24 h at most) and the job's own seconds,
    # never the judge's online seconds per call on top
    online_cell = _estimate(_judged(given, tmp_path))
    assert cell.wall_s == HOUR + STARTUP_S
    assert online_cell.wall_s > STARTUP_S  # the same calls online take seconds per call
    assert (cell.range.low.wall_s, cell.range.high.wall_s) == (
        HOUR + STARTUP_BOUNDS[0],
        DAY + STARTUP_BOUNDS[1],
    )

    done = cli(*items, "estimate=true", env={"ANTHROPIC_API_KEY": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    (row,) = [x for x in lines if x.startswith("  judge=claude") and " in batches:" not in x]
    assert row.startswith("  judge=claude [batch] ")
    lows = _online(span.low.prompt_tokens, span.low.completion_tokens)
    highs = _online(span.high.prompt_tokens, span.high.completion_tokens)
    online_text, batch_text = row.split()[-2:]
    assert online_text == f"{lows:,.2f}–{highs:,.2f}"
    assert batch_text == f"{lows / 2:,.2f}–{highs / 2:,.2f}"
    assert "about 1 h typical, 24 h at most, per batch round" in done.stdout
    assert "judge=claude in batches: 1 batch round (booookscore" in done.stdout


def test_without_batch_the_table_still_shows_what_batch_would_cost(
    given: Path,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    cell = _estimate(_judged(given, tmp_path))
    judge, span = _role(cell, "judge")
    assert not judge.spec.batch and judge.can_batch
    assert span.high.cost_usd == span.high.online_usd  # it pays the online price
    assert span.high.batch_usd == pytest.approx(span.high.online_usd / 2, rel=1e-12)
    row = next(line for line in cell_lines(cell) if line.startswith("  judge="))
    assert "[batch]" not in row and row.split()[-1] != "–"
    assert cell.batch_rounds == () and cell.wall_s < HOUR


STEPS = ("steps/outline", "steps/draft", "steps/polish")
"""A strategy's three dependent steps (each waits for the last one's answers)."""
STEPPED = f"""
from runner.api import Phase, StrategyResult

ROLES = ("model",)
IGNORES = {{}}
PROMPT_DIRS = ()
{{batch_roles}}

def summarize(chunks, model):
    return StrategyResult(summary="")


def estimate(inputs):
    return [Phase("model", step, len(inputs.chunks), 1000.0, 100.0, 1) for step in {STEPS!r}]
"""


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A study folder (the current folder) with a strategy that lets its model batch and one
    that does not, and one book."""
    monkeypatch.chdir(tmp_path)
    for name, roles in (("stepped", 'BATCH_ROLES = ("model",)'), ("chained", "")):
        source = textwrap.dedent(STEPPED.replace("{batch_roles}", roles)).lstrip()
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        monkeypatch.delitem(sys.modules, name, raising=False)
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "story.txt").write_text(STORY, encoding="utf-8")
    load.cache_clear()
    return tmp_path


def _stepped(name: str, *more: str) -> list[str]:
    return [
        "strategy=none",
        f"strategy.name={name}",
        "data=dir",
        "data.path=books",
        "chunk=1024",
        "metrics=none",
        "model=claude",
        f"tracking.uri=sqlite:///{Path.cwd() / 'mlruns' / 'mlflow.db'}",
        *more,
    ]


def test_each_dependent_step_is_a_batch_round_and_the_rounds_multiply(study: Path) -> None:
    cell = _estimate(_stepped("stepped", batch_on("model", "claude")))
    assert cell.batch_rounds == (("model", 3),)
    assert cell.wall_s == 3 * HOUR + STARTUP_S
    assert cell.range.high.wall_s == 3 * DAY + STARTUP_BOUNDS[1]
    (waits,) = [n for n in cell.notes if "3 batch rounds one after another" in n]
    assert all(step in waits for step in STEPS) and "3 h typical, 72 h at most" in waits
    # three rounds may take 72 h, beyond the default batch_timeout of 24 h: said so
    assert any("model.batch_timeout=86400 (24 h)" in n and "FAILED" in n for n in cell.notes)
    model, span = _role(cell, "model")
    online = _online(span.high.prompt_tokens, span.high.completion_tokens)
    assert span.high.cost_usd == pytest.approx(online / 2, rel=1e-12)


def test_a_role_whose_strategy_cannot_batch_shows_no_batch_price(study: Path) -> None:
    cell = _estimate(_stepped("chained"))
    model, span = _role(cell, "model")
    assert not model.can_batch
    assert span.high.batch_usd == span.high.online_usd
    row = next(line for line in cell_lines(cell) if line.startswith("  model="))
    assert row.split()[-1] == "–"
    assert not cell.mixed and cell.batch_rounds == ()


def test_a_mixed_cell_prints_what_it_pays_as_configured(tmp_path: Path) -> None:
    books = tmp_path / "books"
    books.mkdir()
    (books / "story.txt").write_text(STORY, encoding="utf-8")
    items = [
        "strategy=baseline",
        "model=claude",
        "data=dir",
        f"data.path={books}",
        "metrics=booookscore",
        "judge=claude",
        batch_on("judge", "claude"),
        f"tracking.uri=sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
        f"cache.dir={tmp_path / 'cache'}",
    ]
    cell = _estimate(items)
    assert cell.mixed  # the judge batches; the model could (baseline lets it) and does not
    paid = sum(r.batch_usd if r.role == "judge" else r.online_usd for r in cell.roles)
    assert cell.cost_usd == pytest.approx(paid, rel=1e-12)
    assert cell.figures.online_usd > paid > cell.figures.batch_usd
    line = cell_lines(cell)[-1]
    assert line.startswith("  as configured (judge in batches, the others online): USD ")
