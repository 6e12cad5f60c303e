"""The links a job and a sweep print open runs-table views that select the right runs.

A link names a shared view (``?viewStateShareKey=<key>``); the view, an experiment tag, holds
the filter and the columns MLflow's UI applies. Each test follows a printed link to its view
in the store and hands the view's filter to MLflow's own search: the runs it returns are
compared with the ids the test created, an independent answer. The browser side (the table
as a researcher sees it) is ``test_ui_first_screen.py``.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from runner.sweep.status import finish_parent
from runner.tracking.runs_view import VIEW_PREFIX
from runner.tracking.tags import HEADLINE_TAG, PARENT_TAG, RUN_KIND_TAG, SWEEP_KIND
from runner.tracking.writer import Tracker
from runner.ui import JOB_EXECUTION, command, open_lines, problem, run_url, server_env, sweep_url
from runner.ui import sweep_lines as open_sweep_lines

PAPER = ["booookscore/score", "stats/length_tokens"]
ROLES = ["strategy", "model", "chunk"]


@dataclass
class Store:
    """A store with a lone job, a sweep of two jobs, and another sweep's job beside them."""

    uri: str
    client: MlflowClient
    experiment_id: str
    lone: str
    parent: str
    children: list[str]
    stranger: str


def _job(uri: str, name: str, metrics: dict[str, float], tags: dict[str, str]) -> Tracker:
    tracker = Tracker(uri, "links")
    tracker.start(name, tags)
    tracker.log_params({"strategy": name, "model": "m", "chunk": 2048, "seed": 0})
    tracker.log_metrics(metrics)
    return tracker


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    uri = f"sqlite:///{tmp_path_factory.mktemp('links') / 'mlruns' / 'mlflow.db'}"
    lone = _job(uri, "lone", {"booookscore/score": 50.0, "cost_usd": 0.1}, {})
    lone.show_columns([*PAPER, "cost_usd"], ROLES)
    parent = Tracker(uri, "links")
    parent.start("sweep: strategy=a,b", {RUN_KIND_TAG: SWEEP_KIND})
    parent.log_params({"sweep.keys": "strategy,seed"})
    parent.show_sweep(parent.run_id, [], ["strategy", "seed"], start=True)
    children = []
    for name, headline in (("strategy=a", PAPER[:1]), ("strategy=b", PAPER[1:])):
        child = _job(uri, name, {m: 1.0 for m in headline}, {PARENT_TAG: parent.run_id})
        child.set_tags({HEADLINE_TAG: json.dumps(headline)})
        child.show_columns([*headline, "cost_usd"], [*ROLES, "seed"], sweep=parent.run_id)
        child.finish("FINISHED")
        children.append(child.run_id)
    other = Tracker(uri, "links")
    other.start("another sweep", {RUN_KIND_TAG: SWEEP_KIND})
    stranger = _job(uri, "strategy=c", {"booookscore/score": 9.0}, {PARENT_TAG: other.run_id})
    client = MlflowClient(uri)
    return Store(
        uri, client, lone.experiment_id, lone.run_id, parent.run_id, children, stranger.run_id
    )


def _view(store: Store, url: str) -> dict[str, object]:
    """The shared view a link opens, as MLflow's UI reads it: the experiment tag of its key."""
    fragment = urllib.parse.urlsplit(url).fragment
    path, _, query = fragment.partition("?")
    assert path == f"/experiments/{store.experiment_id}/runs", url
    params = urllib.parse.parse_qs(query)
    assert params["workflowType"] == ["machine_learning"]
    (key,) = params["viewStateShareKey"]
    tags = store.client.get_experiment(store.experiment_id).tags
    return dict(json.loads(tags[VIEW_PREFIX + key]))


def _selected(store: Store, view: dict[str, object]) -> set[str]:
    """The runs MLflow's search returns for the view's filter (what the table lists)."""
    found = store.client.search_runs([store.experiment_id], str(view["searchFilter"]))
    return {run.info.run_id for run in found}


def test_a_jobs_link_opens_a_table_of_that_run_alone_with_its_scores(store: Store) -> None:
    view = _view(store, run_url(store.uri, store.experiment_id, store.lone))
    assert _selected(store, view) == {store.lone}
    assert view["selectedColumns"] == [
        "metrics.`booookscore/score`",
        "metrics.`stats/length_tokens`",
        "metrics.`cost_usd`",
        "params.`strategy`",
        "params.`model`",
        "params.`chunk`",
    ]
    order = view["columnOrder"]
    assert isinstance(order, list)
    assert order[:3] == [
        "attributes.`Run Name`",
        "runDateAndNestInfo",
        "metrics.`booookscore/score`",
    ]
    assert order[-1] == "duration"  # after every score


def test_each_jobs_link_selects_its_own_run(store: Store) -> None:
    for run_id in [store.lone, *store.children]:
        view = _view(store, run_url(store.uri, store.experiment_id, run_id))
        assert _selected(store, view) == {run_id}


def test_a_sweeps_link_opens_its_jobs_not_its_parent_nor_another_sweeps(store: Store) -> None:
    view = _view(store, sweep_url(store.uri, store.experiment_id, store.parent))
    assert _selected(store, view) == set(store.children)
    columns = view["selectedColumns"]
    assert isinstance(columns, list)
    assert {"metrics.`booookscore/score`", "metrics.`stats/length_tokens`"} <= set(columns)
    assert "params.`seed`" in columns  # a swept key
    # MLflow's UI fetches the parents of the runs it lists (and folds the jobs under them)
    # only when sorting by start time: the view sorts by name.
    assert view["orderByKey"] == "tags.`mlflow.runName`"


def test_a_finished_sweep_prints_its_link_with_every_jobs_headline(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert finish_parent(store.uri, store.parent, [], "links") == "FINISHED"
    printed = capsys.readouterr().err
    url = re.findall(r"then open (\S+)", printed)[-1]
    view = _view(store, url)
    assert _selected(store, view) == set(store.children)
    # the swept keys first, then the jobs' headlines (each job its own), the cost, settings
    assert view["selectedColumns"] == [
        "params.`strategy`",
        "params.`seed`",
        "metrics.`booookscore/score`",
        "metrics.`stats/length_tokens`",
        "metrics.`cost_usd`",
        "params.`model`",
        "params.`chunk`",
    ]
    serve = next(line for line in printed.splitlines() if "python -m runner.ui" in line)
    argv = command(shlex.split(serve.strip())[3:])  # the pasted command serves this store
    assert argv[argv.index("--backend-store-uri") + 1] == store.uri
    # the report's command names this store too: pasted, it reads these runs, not ./mlruns
    report = shlex.split(printed.split("the tables: ")[1].splitlines()[0])
    assert report[:3] == ["python", "-m", "runner.report"]
    assert f"tracking.uri={store.uri}" in report and "tracking.experiment=links" in report


def test_a_store_behind_a_server_needs_no_command() -> None:
    url = sweep_url("http://tracking.example:5000/", "3", "abc")
    assert url == (
        "http://tracking.example:5000/#/experiments/3/runs"
        "?workflowType=machine_learning&viewStateShareKey=sweep-abc"
    )
    assert open_lines("http://tracking.example:5000/", url) == [f"open {url}"]


@pytest.mark.parametrize(
    "given",
    [
        ["tracking.uri=sqlite:////data/m/mlflow.db", "--port", "5001"],
        ["--tracking-uri", "sqlite:////data/m/mlflow.db", "--port", "5001"],
        ["--tracking-uri=sqlite:////data/m/mlflow.db", "--port", "5001"],
        ["--backend-store-uri", "sqlite:////data/m/mlflow.db", "--port", "5001"],
    ],
)
def test_the_ui_takes_the_store_as_the_other_commands_name_it(given: list[str]) -> None:
    assert command(given) == [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--workers",
        "1",
        "--backend-store-uri",
        "sqlite:////data/m/mlflow.db",
        "--port",
        "5001",
    ]


def test_the_ui_leaves_mlflows_job_runner_off_unless_the_user_turns_it_on() -> None:
    """Off by default (tests/test_offline.py finds none of its processes under a real UI);
    a researcher's own setting is kept."""
    assert server_env({"HOME": "/h"}) == {"HOME": "/h", JOB_EXECUTION: "false"}
    assert server_env({JOB_EXECUTION: "true"}) == {JOB_EXECUTION: "true"}


@pytest.mark.parametrize("given", [["--workers", "4"], ["--workers=4"], ["-w", "4"]])
def test_the_ui_starts_one_server_worker_unless_told_how_many(given: list[str]) -> None:
    """MLflow's 4 workers each import its server: one answers a researcher's browser sooner
    (the browser tests open the runs table, a run and a trace through that one worker)."""
    store = ["--backend-store-uri", "sqlite:////data/m/mlflow.db"]
    assert command(store)[4:] == ["--workers", "1", *store]
    assert command([*store, *given])[4:] == [*store, *given]


def test_the_ui_names_a_missing_store_given_as_tracking_uri(tmp_path: Path) -> None:
    missing = tmp_path / "elsewhere" / "mlflow.db"
    found = problem(command([f"tracking.uri=sqlite:///{missing}"]))
    assert found is not None and f"no store at {missing}" in found
    assert "tracking.uri=" in found


@pytest.mark.parametrize(
    "given",
    [
        ["tracking.uri=sqlite:///a.db", "--tracking-uri", "sqlite:///b.db"],
        ["--tracking-uri=sqlite:///a.db", "--backend-store-uri", "sqlite:///b.db"],
    ],
)
def test_the_ui_refuses_two_stores_in_one_line(given: list[str]) -> None:
    """mlflow would serve the last one given; the user meant one of them: exit 2, one line."""
    done = subprocess.run(
        [sys.executable, "-m", "runner.ui", *given],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "given twice" in lines[0]
    assert "sqlite:///a.db" in lines[0] and "sqlite:///b.db" in lines[0]


def test_a_sweeps_first_link_shows_its_finished_jobs_the_other_every_job(
    tmp_path: Path,
) -> None:
    """A KILLED job's row (partial or no values) is one link away, not among the results;
    the swept keys are the first columns, before the scores."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = Tracker(uri, "links")  # the experiment _job logs to
    parent.start("sweep: seed=0,1", {RUN_KIND_TAG: SWEEP_KIND})
    parent.show_sweep(parent.run_id, [], ["seed"], start=True, swept=["seed"])
    ids = {}
    for seed, status in ((0, "FINISHED"), (1, "KILLED")):
        child = _job(uri, f"seed={seed}", {"booookscore/score": 1.0}, {PARENT_TAG: parent.run_id})
        child.show_columns(["booookscore/score"], [*ROLES, "seed"], sweep=parent.run_id)
        child.finish(status)
        ids[status] = child.run_id
    parent.show_sweep(parent.run_id, ["booookscore/score"], [*ROLES, "seed"], swept=["seed"])
    store = Store(uri, MlflowClient(uri), parent.experiment_id, "", parent.run_id, [], "")
    lines = open_sweep_lines(uri, parent.experiment_id, parent.run_id)
    first = next(line for line in lines if "viewStateShareKey=" in line).split("then open ")[1]
    every = lines[-1].split("every job, KILLED and FAILED ones too: ")[1]
    assert _selected(store, _view(store, first)) == {ids["FINISHED"]}
    assert _selected(store, _view(store, every)) == set(ids.values())
    columns = _view(store, first)["selectedColumns"]
    assert isinstance(columns, list)
    assert columns.index("params.`seed`") < columns.index("metrics.`booookscore/score`")


def test_a_cell_run_again_in_its_sweep_shows_one_row_in_the_sweeps_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A researcher's strategy edited between two runs of one sweep: the sweep's key holds
    its config, not its plugins' files, so the rerun finds the same parent and runs both cells
    again. The first link then shows the two new jobs, each older one is tagged superseded
    by the new job of its own seed, and the link to every job lists all four."""
    from runner.tracking.runs_view import children_filter
    from runner.tracking.tags import SUPERSEDED_TAG
    from tests.helpers.in_process import run_in_process
    from tests.helpers.study_folder import DOCS, LOADER
    from tests.runner.report.test_report_superseded import STRATEGY

    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    (tmp_path / "three_docs.py").write_text(LOADER.format(docs=DOCS).lstrip())
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # the fork reads each edit afresh
    args = [
        "-m",
        "seed=0,1",
        "strategy=none",
        "strategy.name=first_sent",
        "data=sample",
        "data.source=three_docs",
        "metrics=stats",
        f"tracking.uri={uri}",
        "cache.enabled=false",
        "progress=off",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
    ]
    done = []
    for words, comment in ((2, ""), (3, " Longer.")):
        strategy = STRATEGY.format(words=words, comment=comment)
        (tmp_path / "first_sent.py").write_text(strategy.lstrip())
        done.append(run_in_process(*args, cwd=tmp_path))
        assert done[-1].returncode == 0, done[-1].stderr[-3000:]
    assert done[0].stderr.count("runs again a cell") == 0
    assert done[1].stderr.count("runs again a cell the sweep has FINISHED") == 2, done[1].stderr
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("summarization").experiment_id
    (parent,) = client.search_runs([experiment], f"tags.`{RUN_KIND_TAG}` = '{SWEEP_KIND}'")
    jobs = client.search_runs([experiment], f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
    assert len(jobs) == 4 and {j.info.status for j in jobs} == {"FINISHED"}
    newer = {j.data.params["seed"]: j for j in jobs if SUPERSEDED_TAG not in j.data.tags}
    older = [j for j in jobs if SUPERSEDED_TAG in j.data.tags]
    assert sorted(newer) == ["0", "1"] and len(older) == 2
    for job in older:
        by = newer[job.data.params["seed"]]
        assert job.data.tags[SUPERSEDED_TAG] == by.info.run_id
        assert job.info.start_time < by.info.start_time
    shown = client.search_runs([experiment], children_filter(parent.info.run_id))
    assert {r.info.run_id for r in shown} == {j.info.run_id for j in newer.values()}
    every = client.search_runs([experiment], children_filter(parent.info.run_id, False))
    assert len(every) == 4


def test_a_run_name_shows_a_swept_float_without_its_binary_noise() -> None:
    """``temperature=range(0,1,0.1)`` sweeps 0.7 as 0.7000000000000001 (Hydra's own values)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from runner.sweep.callback import job_run_name

    (swept,) = OverridesParser.create().parse_overrides(["temperature=range(0,1,0.1)"])
    values = list(swept.sweep_string_iterator())
    assert "0.7000000000000001" in values  # what the run's params keep
    names = [job_run_name((f"temperature={v}",), ("temperature",)) for v in values]
    assert names == [f"temperature={i / 10}" for i in range(10)]
