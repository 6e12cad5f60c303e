"""-m sweeps: a parent run with children, resume after a kill, budgets, names, presets,
and what the MLflow UI will show (through a real ``mlflow server``'s REST API)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import BudgetExceeded
from runner.config.run_config import build_run_config
from runner.sweep.callback import job_run_name, swept_keys
from tests.helpers.cli import runner_cli
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply
from tests.helpers.ports import free_port
from tests.runner.config.test_config import CONF, composed
from tests.runner.test_app import all_runs, overrides, run
from tests.strategies.conftest import responder

REPO = Path(__file__).resolve().parents[3]


def _children(uri: str, parent: str) -> list[Any]:
    return [r for r in all_runs(uri) if r.data.tags.get("mlflow.parentRunId") == parent]


def _parents(uri: str) -> list[Any]:
    return [r for r in all_runs(uri, parents=True) if r.data.tags.get("runner.kind") == "sweep"]


@pytest.mark.parametrize(
    ("overrides_", "keys"),
    [
        (["a=1,2", "b=[1,2]", "c=[1,2],[3]", "d=range(1,3)", "e='x,y'", "f=x"], ("a", "c", "d")),
        (["+experiment=local_demo"], ("strategy",)),
    ],
)
def test_swept_keys(overrides_: list[str], keys: tuple[str, ...]) -> None:
    params = {"strategy": "baseline,hier"} if overrides_[0].startswith("+experiment") else None
    assert swept_keys(overrides_, params) == keys


def test_a_job_is_named_by_what_its_sweep_varies() -> None:
    items = (
        "strategy=hier",
        "chunk=2048",
        "data.path=/data/released/claude-88000-hier.summaries.json",
        "seed=0",
    )
    assert (
        job_run_name(items, ("strategy", "data.path"))
        == "strategy=hier,path=claude-88000-hier.summaries.json"
    )


def test_a_one_cell_sweep_is_named_by_its_experiment_not_where_results_go() -> None:
    items = ("strategy=lead_k", "tracking.uri=sqlite:////tmp/x/mlflow.db", "cache.dir=/tmp/c")
    assert job_run_name(items, ()) == "strategy=lead_k"


@pytest.mark.parametrize("preset", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_preset_composes_and_validates_in_every_cell(preset: str) -> None:
    """Each cell of the preset's grid (every value of each swept key, others at their first)."""
    import yaml

    raw = yaml.safe_load((CONF / "experiment" / f"{preset}.yaml").read_text())
    params = ((raw.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    values = {key: _options(str(value)) for key, value in params.items()}
    if not values:  # a preset of one job (judge_reliability)
        assert build_run_config(composed(f"+experiment={preset}")).experiment == preset
    for key, options in values.items():
        for option in options:
            cell = [f"{k}={option if k == key else v[0]}" for k, v in values.items()]
            config = build_run_config(composed(f"+experiment={preset}", *cell))
            assert config.experiment == preset


def _options(value: str) -> list[str]:
    """'a,b' -> ['a', 'b']; '[x,y],[z]' -> ['[x,y]', '[z]']."""
    out, depth, current = [], 0, ""
    for char in value:
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += char
    return [*out, current]


def test_a_joblib_sweep_is_one_parent_with_its_children(
    stores: dict[str, str], tmp_path: Path
) -> None:
    with FakeOpenAIServer(responder(), latency_s=0.1) as server:
        proc = runner_cli(
            [
                "-m",
                "hydra/launcher=joblib",
                "hydra.launcher.n_jobs=2",
                "strategy=baseline,hier",
                "chunk=512,1024",
                "data.limit=1",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
                *overrides(server.url, stores),
            ]
        )
        _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    uri = stores["tracking.uri"]
    (parent,) = _parents(uri)
    children = _children(uri, parent.info.run_id)
    assert len(children) == 4 and {c.info.status for c in children} == {"FINISHED"}
    assert sorted(c.info.run_name for c in children) == [
        "strategy=baseline,chunk=1024",
        "strategy=baseline,chunk=512",
        "strategy=hier,chunk=1024",
        "strategy=hier,chunk=512",
    ]
    assert parent.info.status == "FINISHED" and parent.data.params["sweep.keys"] == "strategy,chunk"
    assert all(
        c.data.tags["mlflow.note.content"].startswith(c.data.params["strategy"]) for c in children
    )


def test_a_killed_sweep_rerun_finishes_only_the_missing_cells(
    stores: dict[str, str], tmp_path: Path
) -> None:
    answered: list[str] = []
    hier = responder()

    def answer(request: dict[str, Any]) -> str:
        reply = hier(request)
        answered.append(
            json.dumps(request["messages"], sort_keys=True) + str(request.get("max_tokens"))
        )
        return reply

    args = [
        "-m",
        "strategy=hier",
        "chunk=512,1024,2048",
        "data.limit=1",
        "model.concurrency=1",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
    ]
    uri = stores["tracking.uri"]
    with FakeOpenAIServer(answer, latency_s=0.15) as server:
        proc = runner_cli([*args, *overrides(server.url, stores)])
        deadline = time.monotonic() + 300
        # Hydra makes <sweep dir>/1 when the second job starts (the first has finished); wait
        # for a few of its calls, then stop the sweep. (Polling MLflow here would race the
        # sweep's creation of the store.)
        while not (tmp_path / "sweep" / "1").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.2)
        started = len(answered)
        while len(answered) < started + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        first = list(answered)
        answered.clear()
        rerun = runner_cli([*args, *overrides(server.url, stores)])
        out, stderr = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, stderr[-3000:]
    (parent,) = _parents(uri)  # the rerun found the same parent
    children = _children(uri, parent.info.run_id)
    finished = [c for c in children if c.info.status == "FINISHED"]
    assert sorted(c.data.params["chunk"] for c in finished) == ["1024", "2048", "512"]
    assert len(finished) == 3, "a finished cell ran again"
    assert [c.info.status for c in children if c.info.status != "FINISHED"] == ["KILLED"]
    assert "skipped chunk=512" in out
    # the rerun says at its start where its jobs' scores will show, as a first run does
    lines = out.splitlines()
    opened = next(i for i, line in enumerate(lines) if line.endswith("(2 of 3 cells to run)"))
    assert lines[opened + 1].startswith("sweep: its FINISHED jobs side by side"), out
    assert f"viewStateShareKey=sweep-{parent.info.run_id}" in lines[opened + 3], out
    repeated = [r for r in answered if r in first]
    assert len(repeated) <= 1, (
        f"{len(repeated)} answered calls were paid again"
    )  # at most the one in flight


def test_an_identical_rerun_launches_no_job_and_a_killed_or_deleted_cell_runs_again(
    stores: dict[str, str], tmp_path: Path
) -> None:
    """The sweeper decides before any job: a rerun of a finished sweep calls no model, makes no
    run and leaves the parent as it was; a cell whose run was killed or deleted runs again."""
    from runner.tracking import sqlite_peek as store_peek

    args = ["-m", "seed=0,1,2", "data.limit=1", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    uri = stores["tracking.uri"]
    client = MlflowClient(uri)
    with FakeOpenAIServer(responder()) as server:
        out, stderr = runner_cli([*args, *overrides(server.url, stores)]).communicate(timeout=600)
        assert "error" not in stderr, stderr[-3000:]
        first_calls = len(server.requests)
        (parent,) = _parents(uri)
        children = sorted(_children(uri, parent.info.run_id), key=lambda r: r.data.params["seed"])
        assert first_calls == 3 and [c.info.status for c in children] == ["FINISHED"] * 3
        ended = parent.info.end_time

        rerun = runner_cli([*args, *overrides(server.url, stores)])
        out, stderr = rerun.communicate(timeout=600)
        assert rerun.returncode == 0, stderr[-3000:]
        assert len(server.requests) == first_calls, "the rerun called the model"
        assert sorted(
            line.split(":")[0] for line in out.splitlines() if line.startswith("skipped")
        ) == ["skipped seed=0", "skipped seed=1", "skipped seed=2"]
        assert len(all_runs(uri, parents=True)) == 4, "the rerun made a run"
        again = client.get_run(parent.info.run_id).info
        assert (again.status, again.end_time) == ("FINISHED", ended), "the parent was touched"
        assert (
            "Launching" not in out + stderr
        )  # Hydra's launcher never started: no job, no import of MLflow

        # Killed after its last cell finished but before its parent was ended: the parent
        # stays RUNNING; a rerun has no cell to run and ends it as its children earn.
        client.update_run(parent.info.run_id, status="RUNNING")
        rerun = runner_cli([*args, *overrides(server.url, stores)])
        out, stderr = rerun.communicate(timeout=600)
        assert rerun.returncode == 0, stderr[-3000:]
        assert len(server.requests) == first_calls, "the rerun called the model"
        assert len(all_runs(uri, parents=True)) == 4, "the rerun made a run"
        assert client.get_run(parent.info.run_id).info.status == "FINISHED"

        client.set_terminated(
            children[0].info.run_id, "KILLED"
        )  # as close_stale leaves a dead job's run
        client.delete_run(children[1].info.run_id)
        for cached in Path(stores["cache.dir"]).rglob(
            "*"
        ):  # so that a cell that runs calls the model
            if cached.is_file():
                cached.unlink()
        rerun = runner_cli([*args, *overrides(server.url, stores)])
        out, stderr = rerun.communicate(timeout=600)
        assert rerun.returncode == 0, stderr[-3000:]
        assert len(server.requests) == first_calls + 2
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("skipped")] == [
        "skipped seed=2"
    ]
    (parent,) = _parents(uri)
    assert parent.info.status == "FINISHED"
    finished = [c for c in _children(uri, parent.info.run_id) if c.info.status == "FINISHED"]
    assert sorted(c.data.params["seed"] for c in finished) == ["0", "1", "2"]
    # the one query behind it, read with sqlite3, agrees with MLflow's answer
    done = store_peek.done_cells(uri, "summarization", parent.info.run_id)
    assert done == {c.data.tags["fingerprint"]: c.info.run_id for c in finished}
    store_peek._sqlite_file, sqlite_file = (
        (lambda uri: None),
        store_peek._sqlite_file,
    )  # MLflow's own query
    try:
        assert store_peek.done_cells(uri, "summarization", parent.info.run_id) == done
    finally:
        store_peek._sqlite_file = sqlite_file


def test_a_finished_run_with_failed_documents_does_not_count_as_done() -> None:
    from runner.tracking.done import newest_clean

    rows = [("a", "new", "doc-3: timeout"), ("a", "old", ""), ("b", "only", ""), ("", "no-tag", "")]
    assert newest_clean(rows) == {"b": "only"}


@contextlib.contextmanager
def _sweeper(*sweep: str) -> Iterator[tuple[Any, list[tuple[str, ...]]]]:
    """A ResumingSweeper on the sweep's composed config, as Hydra sets one up for ``-m``, and the
    sweep's cells."""
    from hydra import initialize_config_dir
    from hydra._internal.callbacks import Callbacks
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.types import HydraContext, RunMode

    from hydra_plugins.summarization_runner_sweeper.resuming_sweeper import ResumingSweeper

    before = HydraConfig.instance().cfg
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration("config", list(sweep), RunMode.MULTIRUN)
        HydraConfig.instance().set_config(master)
        sweeper = ResumingSweeper(max_batch_size=None)
        sweeper.hydra_context, sweeper.config = (
            HydraContext(config_loader=loader, callbacks=Callbacks()),
            master,
        )
        (cells,) = BasicSweeper.split_arguments(
            OverridesParser.create().parse_overrides(list(sweep)), None
        )
        try:
            yield sweeper, [tuple(cell) for cell in cells]
        finally:
            HydraConfig.instance().cfg = before


def _identity(sweeper: Any, cell: tuple[str, ...], index: int) -> tuple[str, str, str] | None:
    """(store, experiment, fingerprint) the sweeper finds for a cell; None with force=true."""
    from hydra_plugins.summarization_runner_sweeper.cell_config import hydra_config_kept
    from hydra_plugins.summarization_runner_sweeper.checks import CheckedCell, check_cell

    with hydra_config_kept():
        found = check_cell(sweeper.hydra_context, sweeper.config, cell, index)
    assert isinstance(found, CheckedCell), found
    if found.identity is None:
        return None
    return found.identity.uri, found.identity.experiment, found.identity.fingerprint


@pytest.mark.parametrize(
    "sweep",
    [
        ["chunk=512,1024", "seed=0,1"],
        ["strategy=hier", "model.temperature=0.1,0.2", "data.limit=1,2", "metrics=stats"],
        ["model=gpt4", "model.api_base=http://127.0.0.1:9/v1", "judge.temperature=0,0.3"],
        ["strategy=baseline,hier"],
        ["+extra=1,2"],
        ["model.temperature=0.1,0.2", "model={temperature: 0.5}"],
    ],
)
def test_a_cells_config_is_the_config_hydra_composes(sweep: list[str]) -> None:
    from omegaconf import OmegaConf

    from hydra_plugins.summarization_runner_sweeper.cell_config import (
        cell_config,
        hydra_config_kept,
    )

    mine = []
    with _sweeper(*sweep) as (sweeper, cells), hydra_config_kept():
        for index, cell in enumerate(cells):
            made = cell_config(sweeper.hydra_context, sweeper.config, cell, index)
            mine.append(OmegaConf.to_container(made, resolve=True))
    assert len(cells) > 1
    for cell, config in zip(cells, mine, strict=True):
        assert config == composed(*cell), cell


def test_the_sweeper_fingerprints_each_cell_as_its_job_does(tmp_path: Path) -> None:
    from runner.config.fingerprint import fingerprint, prompt_files

    prompt = tmp_path / "judge-prompt.txt"
    prompt.write_text("Summary:\n{}\nSentence:\n{}\n", encoding="utf-8")
    sweep = [
        f"metrics.booookscore.prompt_path={prompt}",
        "chunk=512,1024",
        "strategy=baseline,hier",
    ]
    with _sweeper(*sweep) as (sweeper, cells):
        before = [_identity(sweeper, cell, index) for index, cell in enumerate(cells)]
        prompt.write_text(
            "Summary:\n{}\nThe sentence:\n{}\n", encoding="utf-8"
        )  # same path, new words
        after = [_identity(sweeper, cell, index) for index, cell in enumerate(cells)]
    with _sweeper("force=true", "chunk=512,1024") as (sweeper, forced):
        assert [_identity(sweeper, cell, index) for index, cell in enumerate(forced)] == [
            None,
            None,
        ]
    jobs = []
    for cell in cells:
        config = build_run_config(composed(*cell))
        jobs.append(fingerprint(config, prompt_files(config)))
    assert [found[2] for found in after if found] == jobs  # what runner.run.lifecycle compares
    assert len(set(jobs)) == 4
    assert all(b and a and b[2] != a[2] for b, a in zip(before, after, strict=True)), (
        "a changed prompt was reused"
    )


def test_the_job_budget_stops_the_run(stores: dict[str, str]) -> None:
    with FakeOpenAIServer(responder()) as server:
        items = overrides(
            server.url,
            stores,
            "data.limit=3",
            "model.concurrency=1",
            "model.input_cost_per_token=0.001",
            "budget.usd=1",
        )
        with pytest.raises(BudgetExceeded, match=r"budget.usd=1.0 reached"):
            run(items)
        assert len(server.requests) == 1  # about 2,200 prompt tokens: $2.2 on the first call
    (stopped,) = all_runs(stores["tracking.uri"])
    assert stopped.info.status == "FAILED" and stopped.data.tags["runner.stopped"] == "budget"
    assert stopped.data.metrics == {} or "booookscore/score" not in stopped.data.metrics


def test_the_sweep_budget_is_shared_by_its_jobs(stores: dict[str, str], tmp_path: Path) -> None:
    with FakeOpenAIServer(responder()) as server:
        proc = runner_cli(
            [
                "-m",
                "model.temperature=0.1,0.2",
                "data.limit=1",
                "model.input_cost_per_token=0.001",
                "budget.sweep_usd=1",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
                *overrides(server.url, stores),
            ]
        )
        _, stderr = proc.communicate(timeout=600)
        assert len(server.requests) == 1
    assert proc.returncode == 1, stderr[-2000:]
    assert "budget.sweep_usd=1.0 reached" in stderr
    (parent,) = _parents(stores["tracking.uri"])
    children = _children(stores["tracking.uri"], parent.info.run_id)
    statuses = sorted((c.data.params["model.temperature"], c.info.status) for c in children)
    assert statuses == [("0.1", "FINISHED"), ("0.2", "FAILED")]
    assert json.loads((tmp_path / "sweep" / "spend.json").read_text())["usd"] > 1


def composed_report(*overrides: str) -> dict[str, Any]:
    """conf/report.yaml composed as ``python -m runner.report`` would."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("report", overrides=list(overrides))
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    return {str(k): v for k, v in raw.items()}


def _api(base: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"{base}/api/2.0/mlflow/{path}", data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def test_the_mlflow_ui_shows_the_sweep_as_parent_and_children(
    stores: dict[str, str], tmp_path: Path
) -> None:
    with FakeOpenAIServer(responder()) as server:
        proc = runner_cli(
            [
                "-m",
                "chunk=1024,2048",
                "data.limit=1",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
                *overrides(server.url, stores),
            ]
        )
        _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-2000:]
    port = free_port()
    mlflow = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            stores["tracking.uri"],
            "--artifacts-destination",
            str(tmp_path / "served-artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                experiment = _api(base, "experiments/get-by-name?experiment_name=summarization")[
                    "experiment"
                ]
                break
            except OSError:
                assert time.monotonic() < deadline and mlflow.poll() is None, (
                    "mlflow server did not start"
                )
                time.sleep(0.5)
        runs = _api(
            base,
            "runs/search",
            {"experiment_ids": [experiment["experiment_id"]], "max_results": 50},
        )["runs"]
    finally:
        mlflow.send_signal(signal.SIGTERM)
        mlflow.wait(timeout=30)
    tags = {r["info"]["run_id"]: {t["key"]: t["value"] for t in r["data"]["tags"]} for r in runs}
    (parent_id,) = [i for i, t in tags.items() if t.get("runner.kind") == "sweep"]
    children = [r for r in runs if tags[r["info"]["run_id"]].get("mlflow.parentRunId") == parent_id]
    assert sorted(r["info"]["run_name"] for r in children) == ["chunk=1024", "chunk=2048"]
    for child in children:
        params = {p["key"]: p["value"] for p in child["data"]["params"]}
        metrics = {m["key"]: m["value"] for m in child["data"]["metrics"]}
        assert params["strategy"] == "baseline" and params["chunk"] in ("1024", "2048")
        assert metrics["documents"] == 1 and "stats/length_tokens" in metrics


def test_repeats_get_their_own_seeds_and_cache_slots_and_reports_pool_them(
    stores: dict[str, str], tmp_path: Path
) -> None:
    with FakeOpenAIServer(responder()) as server:
        proc = runner_cli(
            [
                "-m",
                "repeat=range(3)",
                "data.limit=1",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
                *overrides(server.url, stores),
            ]
        )
        _, stderr = proc.communicate(timeout=600)
        seeds = sorted(r["seed"] for r in server.requests)
    assert proc.returncode == 0, stderr[-2000:]
    assert seeds == [0, 1, 2]  # one call per repeat: none served from another repeat's cache slot
    (parent,) = _parents(stores["tracking.uri"])
    assert sorted(
        c.info.run_name for c in _children(stores["tracking.uri"], parent.info.run_id)
    ) == ["repeat=0", "repeat=1", "repeat=2"]
    from runner.report.config import build_report_config
    from runner.report.make import make_report

    raw = composed_report(
        f"tracking.uri={stores['tracking.uri']}", f"out={tmp_path / 'r'}", "plots=false"
    )
    report = make_report(build_report_config(raw))
    csv_text = (tmp_path / "r" / "table.csv").read_text()
    assert (
        "repeat" not in csv_text.splitlines()[0] and ",3," in csv_text
    )  # one cell of 3 pooled runs
    assert report is not None


@pytest.mark.parametrize(
    "launcher", [[], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]], ids=["basic", "joblib"]
)
def test_a_failed_cell_makes_the_sweep_exit_1_whichever_launcher_ran_it(
    launcher: list[str], stores: dict[str, str], tmp_path: Path
) -> None:
    answer = responder()

    def refuse_hot(request: dict[str, Any]) -> Any:
        """A request the server rejects (400, not retried): the cell's run fails mid-job."""
        if request.get("temperature") == 0.9:
            return FakeReply(status=400, text="temperature 0.9 is refused here")
        return answer(request)

    with FakeOpenAIServer(refuse_hot) as server:
        proc = runner_cli(
            [
                "-m",
                "model.temperature=0.1,0.9",
                "strategy=hier",
                "metrics=stats",
                "data.limit=1",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
                *launcher,
                *overrides(server.url, stores),
            ]
        )
        _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 1, stderr[-2000:]
    assert "1 job(s) of the sweep failed" in stderr and "temperature 0.9 is refused here" in stderr
    (parent,) = _parents(stores["tracking.uri"])
    children = _children(stores["tracking.uri"], parent.info.run_id)
    assert sorted((c.data.params["model.temperature"], c.info.status) for c in children) == [
        ("0.1", "FINISHED"),
        ("0.9", "FAILED"),
    ]  # the good cell still ran
    assert parent.info.status == "FAILED" and parent.data.tags["failure"].startswith(
        "1 of 2 jobs failed"
    )


def test_a_bad_value_in_one_cell_stops_the_sweep_before_anything_runs(
    stores: dict[str, str], tmp_path: Path
) -> None:
    with FakeOpenAIServer(responder()) as server:
        proc = runner_cli(
            [
                "-m",
                "chunk=512,-5",
                "strategy=hier",
                "metrics=stats",
                "data.limit=1",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
                *overrides(server.url, stores),
            ]
        )
        _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 2, stderr[-2000:]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert (
        len(lines) == 1
        and "sweep cell chunk=-5: chunk=-5 must be a positive whole number" in lines[0]
    )
    assert server.requests == [] and not Path(stores["tracking.uri"][len("sqlite:///") :]).exists()
