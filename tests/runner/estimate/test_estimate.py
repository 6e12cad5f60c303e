"""estimate=true: exact call counts where the shape is known, checked against real jobs.

The actual count is the loopback server's own count of the requests a real job sent (an
independent measurement), not the estimator's arithmetic. An estimate creates no MLflow run
and sends no request, even without a key; a sweep prints each cell and the total, and a
partly done sweep estimates only its unfinished cells.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from runner.api.chunking import split_into_chunks
from runner.api.text import split_sentences
from runner.config.run_config import build_run_config
from runner.estimate import command
from runner.estimate.cell import CellEstimate
from runner.estimate.history import history
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply
from tests.runner.config.test_config import composed
from tests.runner.test_app import cli, overrides, run
from tests.strategies.conftest import SENTENCES, responder

JUDGE_PROMPT = "determine if that sentence causes any confusion"
INCREMENTAL_PROMPT = "Below is the beginning part of a story:"
SUMMARY_SENTENCES = {"book-a": 3, "book-b": 5}
"""Given summaries, their sentence counts: BooookScore asks once per distinct sentence."""
STORY = " ".join(
    f"{SENTENCES[i % 4][:-1]}, and on day {i} the ferry crossed again." for i in range(400)
)
"""About 6,000 tokens: several chunks of 1,024, distinct sentences throughout."""


def answer(request: dict[str, Any]) -> str:
    """A verdict for BooookScore's judge; the strategies' well-behaved answers otherwise."""
    if any(JUDGE_PROMPT in str(m.get("content", "")) for m in request["messages"]):
        return "Questions: no confusion\nTypes: no confusion"
    return responder()(request)


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeOpenAIServer(answer) as s:
        yield s


@pytest.fixture
def books(tmp_path: Path) -> Path:
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "story.txt").write_text(STORY, encoding="utf-8")
    return folder


@pytest.fixture
def given(tmp_path: Path) -> Path:
    summaries = {
        doc: " ".join(f"{SENTENCES[i % 4][:-1]} in year {i}." for i in range(n))
        for doc, n in SUMMARY_SENTENCES.items()
    }
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps(summaries), encoding="utf-8")
    return path


def _estimate(items: list[str]) -> CellEstimate:
    history.cache_clear()
    command._READ.clear()
    return command.estimate(build_run_config(composed(*items), tuple(items)), "cell")


def _measured(server: FakeOpenAIServer, items: list[str]) -> int:
    """Requests a real job sent to the server."""
    before = len(server.requests)
    result = run(items)
    assert result.totals.calls == len(server.requests) - before
    return len(server.requests) - before


@pytest.mark.parametrize(
    "strategy,chunk,shape",
    [
        ("hier", 1024, "k level-0 calls, one merge, the clean-up"),
        ("hier", 512, "k level-0 calls, one merge, the clean-up"),
        ("incremental", 1024, "k updates, the clean-up"),
        ("baseline", 1024, "one call"),
    ],
)
def test_call_counts_match_a_real_job(
    server: FakeOpenAIServer,
    stores: dict[str, str],
    books: Path,
    strategy: str,
    chunk: int,
    shape: str,
) -> None:
    k = len(split_into_chunks(STORY, chunk))
    assert k >= 5
    items = overrides(
        server.url,
        stores,
        f"strategy={strategy}",
        f"chunk={chunk}",
        "data=dir",
        f"data.path={books}",
        "metrics=none",
        "cache.enabled=false",
    )
    predicted = _estimate(items)
    expected = {"hier": k + 2, "incremental": k + 1, "baseline": 1}[strategy]
    assert predicted.calls == expected, shape
    assert _measured(server, items) == expected


def test_booookscore_over_given_summaries_asks_once_per_sentence(
    server: FakeOpenAIServer, stores: dict[str, str], given: Path
) -> None:
    texts = json.loads(given.read_text(encoding="utf-8"))
    assert [len(split_sentences(t)) for t in texts.values()] == list(SUMMARY_SENTENCES.values())
    items = [
        *overrides(server.url, stores),
        "strategy=none",
        "data=summaries",
        f"data.path={given}",
        "metrics=booookscore",
        "judge=openai_compatible",
        f"judge.api_base={server.url}",
        "cache.enabled=false",
    ]
    predicted = _estimate(items)
    assert predicted.calls == sum(SUMMARY_SENTENCES.values())
    assert _measured(server, items) == sum(SUMMARY_SENTENCES.values())


def test_estimate_makes_no_run_no_request_and_needs_no_key(tmp_path: Path, books: Path) -> None:
    requests: list[Any] = []

    def refuse(request: dict[str, Any]) -> FakeReply:
        requests.append(request)
        return FakeReply("no model call expected", status=500)

    store = tmp_path / "mlruns" / "mlflow.db"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with FakeOpenAIServer(refuse) as server:
        done = cli(
            "strategy=hier",
            "model=gpt4",  # its key, $OPENAI_API_KEY, is unset
            "judge=openai_compatible",
            f"judge.api_base={server.url}",
            "data=dir",
            f"data.path={books}",
            f"tracking.uri=sqlite:///{store}",
            f"hydra.run.dir={tmp_path / 'out'}",
            "estimate=true",
            env=env,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "checks skipped: API keys and servers" in done.stdout
    assert "total (1 of 1 cells to run)" in done.stdout
    assert requests == [] and not store.exists()


def _estimate_sweep(tmp_path: Path, books: Path, *extra: str) -> tuple[Any, Path]:
    """``-m strategy=hier,incremental ... estimate=true`` without API keys; (result, store)."""
    store = tmp_path / "mlruns" / "mlflow.db"
    done = cli(
        "-m",
        *extra,
        "strategy=hier,incremental",
        "model=claude",
        "data=dir",
        f"data.path={books}",
        "metrics=none",
        f"tracking.uri=sqlite:///{store}",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        "estimate=true",
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done, store


def test_a_sweep_prints_each_cell_and_the_total(tmp_path: Path, books: Path) -> None:
    done, store = _estimate_sweep(tmp_path, books)
    lines = done.stdout.splitlines()
    assert any(line.startswith("strategy=hier ") for line in lines), done.stdout
    assert any(line.startswith("strategy=incremental ") for line in lines), done.stdout
    assert any(line.startswith("total (2 of 2 cells to run)") for line in lines), done.stdout
    assert not store.exists()


def test_under_the_basic_sweeper_an_estimate_opens_no_parent_run(
    tmp_path: Path, books: Path
) -> None:
    done, store = _estimate_sweep(tmp_path, books, "hydra/sweeper=basic")
    assert done.stdout.count("estimate (no run, no model call") == 2, done.stdout
    assert not store.exists()


def test_a_partly_done_sweep_estimates_only_its_unfinished_cells(
    stores: dict[str, str], tmp_path: Path, books: Path
) -> None:
    def incremental_fails(request: dict[str, Any]) -> str | FakeReply:
        if INCREMENTAL_PROMPT in str(request["messages"][-1]["content"]):
            return FakeReply("scripted failure", status=400)
        return answer(request)

    sweep = [
        "-m",
        "strategy=hier,incremental",
        "chunk=1024",
        "data=dir",
        f"data.path={books}",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
    ]
    with FakeOpenAIServer(incremental_fails) as server:
        items = [*overrides(server.url, stores), "metrics=none", "progress=off"]
        first = cli(*sweep, *items)
        assert first.returncode == 1, first.stderr[-2000:]  # hier finished, incremental failed
        sent = len(server.requests)
        again = cli(*sweep, *items, "estimate=true")
        assert len(server.requests) == sent
    assert again.returncode == 0, again.stderr[-2000:]
    lines = again.stdout.splitlines()
    (hier,) = [line for line in lines if line.startswith("strategy=hier ")]
    assert "done: run" in hier and "costs nothing" in hier
    (incremental,) = [line for line in lines if line.startswith("strategy=incremental ")]
    assert "done" not in incremental
    assert any(line.startswith("total (1 of 2 cells to run)") for line in lines), again.stdout


def test_a_rate_limit_bounds_the_wall_time(stores: dict[str, str], books: Path) -> None:
    items = [
        *overrides("http://127.0.0.1:9/v1", stores),
        "strategy=hier",
        "chunk=1024",
        "data=dir",
        f"data.path={books}",
        "metrics=none",
    ]
    free = _estimate(items)
    limited = _estimate([*items, "model.rpm=6"])  # one call every 10 s
    assert limited.calls == free.calls
    assert free.wall_s < limited.wall_s
    assert limited.wall_s >= 10.0 * limited.calls


def test_what_the_response_cache_answers_costs_nothing(
    server: FakeOpenAIServer, stores: dict[str, str], given: Path
) -> None:
    # The first summary's questions are cached by a job over it alone; the estimate of the job
    # over both counts only the second summary's, and the real job asks only those.
    items = [
        *overrides(server.url, stores),
        "strategy=none",
        "data=summaries",
        f"data.path={given}",
        "metrics=booookscore",
        "judge=openai_compatible",
        f"judge.api_base={server.url}",
    ]
    first = sorted(SUMMARY_SENTENCES)[0]
    assert _measured(server, [*items, "data.limit=1"]) == SUMMARY_SENTENCES[first]
    predicted = _estimate(items)
    rest = sum(SUMMARY_SENTENCES.values()) - SUMMARY_SENTENCES[first]
    assert predicted.calls == rest
    assert any(f"{SUMMARY_SENTENCES[first]} requests answered" in n for n in predicted.notes)
    assert _measured(server, items) == rest


def test_the_judge_stop_sequences_are_the_metrics() -> None:
    from metrics.booookscore.estimate import STOP as ESTIMATED_STOP
    from metrics.booookscore.judge import STOP

    assert ESTIMATED_STOP == STOP
