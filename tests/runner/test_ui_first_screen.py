"""The MLflow UI's first screen is the researcher's: the runs, their scores, few metrics.

A ``metrics=paper`` job runs against the loopback server (a deterministic responder that
flags one BooookScore sentence in three), then a real ``mlflow server`` serves its store:
the experiment's kind and runs-table view are read back through the REST API the UI uses,
and headless Chromium opens the link ``runner.ui`` makes and must land on the runs table
with the headline score as a column (MLflow 3.17 otherwise opens its GenAI overview); the
run's link must show that run alone with its score, a sweep's link its jobs as rows.
The judge calls in ``usage.json`` are compared with the judge requests the server
received, an independent count.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.run.lifecycle import RunResult
from runner.tracking.runs_view import KIND_TAG, RUNS_KIND, VIEW_TAG
from runner.tracking.tags import PARENT_TAG, RUN_KIND_TAG, SWEEP_KIND
from runner.tracking.usage import USAGE_FILE, read_usage
from runner.tracking.writer import Tracker
from runner.ui import experiment_url, run_page_url, run_url, sweep_url
from tests.helpers.artifacts import artifact
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.test_app import overrides, run
from tests.runner.tracking.test_mlflow_traces import _mlflow_server
from tests.runner.view.test_view import chromium, run_chromium
from tests.test_faults import responder

HEADLINE = {
    "booookscore/score",
    "stats/length_tokens",
    "stats/novel_trigrams_pct",
    "stats/repeated_trigrams_pct",
}
TYPE_RATES = {
    f"booookscore/type/{t}"
    for t in (
        "entity_omission",
        "event_omission",
        "causal_omission",
        "salience",
        "discontinuity",
        "duplication",
        "inconsistency",
        "language",
    )
}
TOTALS = {
    "documents",
    "documents_failed",
    "calls",
    "cost_usd",
    "prompt_tokens",
    "completion_tokens",
    "wall_time_s",
}


@dataclass
class Paper:
    """A finished ``metrics=paper`` run, the requests the server saw, and its store."""

    result: RunResult
    uri: str
    client: MlflowClient
    experiment_id: str
    requests: list[dict[str, Any]]
    root: Path


def _is_judge(request: dict[str, Any]) -> bool:
    return "[Your sentence]" in str(request["messages"][-1]["content"])  # BooookScore's prompt


@pytest.fixture(scope="module")
def paper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Paper]:
    root = tmp_path_factory.mktemp("first-screen")
    stores = {
        "tracking.uri": f"sqlite:///{root / 'mlruns' / 'mlflow.db'}",
        "cache.dir": str(root / "cache"),
    }
    with FakeOpenAIServer(responder) as server:
        items = [item for item in overrides(server.url, stores) if not item.startswith("metrics=")]
        result = run(
            [*items, "metrics=paper", "judge=openai_compatible", f"judge.api_base={server.url}"]
        )
        requests = list(server.requests)
    client = MlflowClient(stores["tracking.uri"])
    experiment_id = client.get_run(result.run_id).info.experiment_id
    yield Paper(result, stores["tracking.uri"], client, experiment_id, requests, root)


def test_a_paper_run_logs_its_headline_values_and_a_handful_of_totals(paper: Paper) -> None:
    metrics = paper.client.get_run(paper.result.run_id).data.metrics
    assert set(metrics) == HEADLINE | TYPE_RATES | TOTALS  # 19: no judge or token counters
    assert min(metrics) == "booookscore/score"  # the compare page's first row
    assert metrics["documents"] == 3 and metrics["calls"] == len(paper.requests)


def test_usage_json_holds_every_moved_counter_with_its_value(paper: Paper) -> None:
    metrics = paper.client.get_run(paper.result.run_id).data.metrics
    usage = read_usage(paper.client, paper.result.run_id)
    system = paper.result.system_metrics
    assert not set(usage) & set(metrics) and set(usage) | set(metrics) == set(
        system
    )  # nothing lost
    assert {"time/setup_s", "time/tracking_start_s", "time/documents_s"} <= set(usage)
    assert {
        "booookscore/judge_calls",
        "booookscore/judge_prompt_tokens",
        "cache_hits",
        "strategy/calls",
    } <= set(usage)
    for key, value in usage.items():
        assert value == pytest.approx(system[key], rel=1e-9, abs=1e-9), key
    judge = [r for r in paper.requests if _is_judge(r)]
    documents = metrics["documents"]  # the counters are means over documents
    assert judge and usage["booookscore/judge_calls"] * documents == pytest.approx(len(judge))
    assert usage["strategy/calls"] * documents == pytest.approx(len(paper.requests) - len(judge))
    assert usage["cache_hits"] == 0
    table = json.loads(artifact(paper.client, paper.result.run_id, USAGE_FILE))
    assert table["columns"] == ["name", "value"]  # MLflow's table format: the UI shows a table


def test_the_experiment_opens_on_its_runs_with_the_score_as_a_column(paper: Paper) -> None:
    tags = paper.client.get_experiment(paper.experiment_id).tags
    assert tags[KIND_TAG] == RUNS_KIND
    columns = json.loads(tags[VIEW_TAG])["selectedColumns"]
    assert [c for c in columns if c.startswith("metrics.")] == [
        "metrics.`booookscore/score`",
        "metrics.`stats/length_tokens`",
        "metrics.`stats/novel_trigrams_pct`",
        "metrics.`stats/repeated_trigrams_pct`",
        "metrics.`cost_usd`",
    ]
    assert "params.`strategy`" in columns and "params.`model`" in columns


def test_an_older_experiment_gets_the_kind_but_a_users_own_kind_stays(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    Tracker(uri, "made-first")  # creates the store
    client = MlflowClient(uri)
    older = client.create_experiment("older")  # as runs logged before the tag existed left it
    mine = client.create_experiment("mine", tags={KIND_TAG: "genai_development"})
    Tracker(uri, "older")
    Tracker(uri, "mine")
    assert client.get_experiment(older).tags[KIND_TAG] == RUNS_KIND
    assert client.get_experiment(mine).tags[KIND_TAG] == "genai_development"


def test_the_links_open_the_runs_view_and_the_run_page() -> None:
    assert run_url("sqlite:////tmp/m/mlflow.db", "3", "abc", port=5001) == (
        "http://127.0.0.1:5001/#/experiments/3/runs?workflowType=machine_learning&viewStateShareKey=run-abc"
    )
    assert run_url("http://tracking.example:5000/", "3", "abc") == (
        "http://tracking.example:5000/#/experiments/3/runs?workflowType=machine_learning&viewStateShareKey=run-abc"
    )
    assert run_page_url("http://tracking.example:5000/", "3", "abc") == (
        "http://tracking.example:5000/#/experiments/3/runs/abc?workflowType=machine_learning"
    )
    assert experiment_url("sqlite:////tmp/m/mlflow.db", "3") == (
        "http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning&viewStateShareKey=runner"
    )
    assert experiment_url("sqlite:////tmp/m/mlflow.db", "3", view=False).endswith(
        "/runs?workflowType=machine_learning"
    )


def _sweep_beside(paper: Paper) -> tuple[str, dict[str, float]]:
    """A sweep of two jobs in the paper run's store, as the runner leaves one: its parent
    run's id and each job's name with its score."""
    parent = Tracker(paper.uri, "summarization")
    parent.start("sweep: strategy=x,y", {RUN_KIND_TAG: SWEEP_KIND})
    parent.show_sweep(parent.run_id, [], ["strategy"], start=True)
    scores = {"strategy=x": 12.5, "strategy=y": 87.25}
    for name, score in scores.items():
        job = Tracker(paper.uri, "summarization")
        job.start(name, {PARENT_TAG: parent.run_id})
        job.log_metrics({"booookscore/score": score, "stats/length_tokens": 40.0})
        job.show_columns(["booookscore/score", "stats/length_tokens"], ["strategy"], parent.run_id)
        job.finish("FINISHED")
    parent.finish("FINISHED")
    return parent.run_id, scores


def test_the_served_experiment_says_runs_and_the_browser_lands_on_them(paper: Paper) -> None:
    """Through ``mlflow server``: the REST answer the UI reads, then the page a browser shows
    for each link: the experiment's (the runs table, the score a column), the run's (that run
    alone, its score in its row) and a sweep's (its jobs as rows, not folded under the parent,
    their scores)."""
    sweep, scores = _sweep_beside(paper)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true"}
    with _mlflow_server(paper.uri, paper.root, env) as api:
        found = api(
            "GET", "/ajax-api/2.0/mlflow/experiments/get-by-name?experiment_name=summarization"
        )
        tags = {t["key"]: t["value"] for t in found["experiment"]["tags"]}
        assert tags[KIND_TAG] == RUNS_KIND and "metrics.`booookscore/score`" in tags[VIEW_TAG]
        port = int(urllib.parse.urlsplit(api.base).port or 0)
        binary = chromium()
        runs = _page_text(
            binary, experiment_url(paper.uri, paper.experiment_id, port), paper.root / "browser-1"
        )
        page = _page_text(
            binary,
            run_url(paper.uri, paper.experiment_id, paper.result.run_id, port),
            paper.root / "browser-2",
        )
        jobs = _page_text(
            binary, sweep_url(paper.uri, paper.experiment_id, sweep, port), paper.root / "browser-3"
        )
    assert "Detect Issues" not in runs and "Model training" in runs
    header = runs[runs.index("Run Name") :]
    assert re.search(r"booookscore/score .*stats/length_tokens", header), header[:500]
    score = paper.client.get_run(paper.result.run_id).data.metrics["booookscore/score"]
    assert format(score, ".6g")[:5] in header  # the score itself, in its row
    row = page[page.index("Run Name") :]
    assert "1 matching run" in page and "Detect Issues" not in page
    assert re.search(r"booookscore/score .*stats/length_tokens", row), row[:500]
    assert format(score, ".6g")[:5] in row and paper.result.run_name[:12] in row
    table = jobs[jobs.index("Run Name") :]
    assert "2 matching runs" in jobs and "sweep: strategy=x,y" not in jobs  # no parent row
    # the pinned name column comes first in the page's text, then the rows' values
    assert re.search(r"strategy=x .*strategy=y .*12\.5 .*87\.25", table), table[:500]


def _page_text(binary: str, url: str, profile: Path) -> str:
    """The page's text once its scripts have run, in a fresh browser ``profile``: no mode or
    columns remembered from an earlier visit, as a researcher's first look."""
    done = run_chromium(
        binary,
        f"--user-data-dir={profile}",
        "--window-size=1400,900",
        "--virtual-time-budget=15000",
        "--dump-dom",
        url,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", done.stdout))
