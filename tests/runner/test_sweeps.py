"""-m sweeps: a parent run with children, resume after a kill, budgets, names, presets,
and what the MLflow UI will show (through a real ``mlflow server``'s REST API)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.config import build_run_config
from runner.errors import BudgetExceeded
from runner.fake_server import FakeOpenAIServer
from runner.sweep import job_run_name, swept_keys
from tests.runner.test_app import all_runs, overrides, run
from tests.runner.test_config import CONF, composed
from tests.strategies.conftest import responder

REPO = Path(__file__).resolve().parents[2]


def _cli(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", *args], cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


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
    items = ("strategy=hier", "chunk=2048", "data.path=/data/released/claude-88000-hier.summaries.json", "seed=0")
    assert job_run_name(items, ("strategy", "data.path")) == "strategy=hier,path=claude-88000-hier.summaries.json"


@pytest.mark.parametrize("preset", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_preset_composes_and_validates_in_every_cell(preset: str) -> None:
    """Each cell of the preset's grid (every value of each swept key, others at their first)."""
    import yaml

    params = yaml.safe_load((CONF / "experiment" / f"{preset}.yaml").read_text())["hydra"]["sweeper"]["params"]
    values = {key: _options(str(value)) for key, value in params.items()}
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


def test_a_joblib_sweep_is_one_parent_with_its_children(stores: dict[str, str], tmp_path: Path) -> None:
    with FakeOpenAIServer(responder(), latency_s=0.1) as server:
        proc = _cli(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "strategy=baseline,hier",
                     "chunk=512,1024", "data.limit=1", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                     *overrides(server.url, stores)])
        _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    uri = stores["tracking.uri"]
    (parent,) = _parents(uri)
    children = _children(uri, parent.info.run_id)
    assert len(children) == 4 and {c.info.status for c in children} == {"FINISHED"}
    assert sorted(c.info.run_name for c in children) == [
        "strategy=baseline,chunk=1024", "strategy=baseline,chunk=512",
        "strategy=hier,chunk=1024", "strategy=hier,chunk=512",
    ]
    assert parent.info.status == "FINISHED" and parent.data.params["sweep.keys"] == "strategy,chunk"
    assert all(c.data.tags["mlflow.note.content"].startswith(c.data.params["strategy"]) for c in children)


def test_a_killed_sweep_rerun_finishes_only_the_missing_cells(stores: dict[str, str], tmp_path: Path) -> None:
    answered: list[str] = []
    hier = responder()

    def answer(request: dict[str, Any]) -> str:
        reply = hier(request)
        answered.append(json.dumps(request["messages"], sort_keys=True) + str(request.get("max_tokens")))
        return reply

    args = ["-m", "strategy=hier", "chunk=512,1024,2048", "data.limit=1", "model.concurrency=1",
            f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    uri = stores["tracking.uri"]
    with FakeOpenAIServer(answer, latency_s=0.15) as server:
        proc = _cli([*args, *overrides(server.url, stores)])
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
        rerun = _cli([*args, *overrides(server.url, stores)])
        out, stderr = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, stderr[-3000:]
    (parent,) = _parents(uri)  # the rerun found the same parent
    children = _children(uri, parent.info.run_id)
    finished = [c for c in children if c.info.status == "FINISHED"]
    assert sorted(c.data.params["chunk"] for c in finished) == ["1024", "2048", "512"]
    assert len(finished) == 3, "a finished cell ran again"
    assert [c.info.status for c in children if c.info.status != "FINISHED"] == ["KILLED"]
    assert "skipped chunk=512" in out
    repeated = [r for r in answered if r in first]
    assert len(repeated) <= 1, f"{len(repeated)} answered calls were paid again"  # at most the one in flight


def test_the_job_budget_stops_the_run(stores: dict[str, str]) -> None:
    with FakeOpenAIServer(responder()) as server:
        items = overrides(server.url, stores, "data.limit=3", "model.concurrency=1",
                          "model.input_cost_per_token=0.001", "budget.usd=1")
        with pytest.raises(BudgetExceeded, match=r"budget.usd=1.0 reached"):
            run(items)
        assert len(server.requests) == 1  # about 3,300 prompt tokens: $3.3 on the first call
    (stopped,) = all_runs(stores["tracking.uri"])
    assert stopped.info.status == "FAILED" and stopped.data.tags["runner.stopped"] == "budget"
    assert stopped.data.metrics == {} or "booookscore/score" not in stopped.data.metrics


def test_the_sweep_budget_is_shared_by_its_jobs(stores: dict[str, str], tmp_path: Path) -> None:
    with FakeOpenAIServer(responder()) as server:
        proc = _cli(["-m", "model.temperature=0.1,0.2", "data.limit=1", "model.input_cost_per_token=0.001",
                     "budget.sweep_usd=1", f"hydra.sweep.dir={tmp_path / 'sweep'}", *overrides(server.url, stores)])
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api(base: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}/api/2.0/mlflow/{path}", data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def test_the_mlflow_ui_shows_the_sweep_as_parent_and_children(stores: dict[str, str], tmp_path: Path) -> None:
    with FakeOpenAIServer(responder()) as server:
        proc = _cli(["-m", "chunk=1024,2048", "data.limit=1", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                     *overrides(server.url, stores)])
        _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-2000:]
    port = _free_port()
    mlflow = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", stores["tracking.uri"],
         "--artifacts-destination", str(tmp_path / "served-artifacts"),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                experiment = _api(base, "experiments/get-by-name?experiment_name=summarization")["experiment"]
                break
            except OSError:
                assert time.monotonic() < deadline and mlflow.poll() is None, "mlflow server did not start"
                time.sleep(0.5)
        runs = _api(base, "runs/search", {"experiment_ids": [experiment["experiment_id"]], "max_results": 50})["runs"]
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


def test_repeats_get_their_own_seeds_and_cache_slots_and_reports_pool_them(stores: dict[str, str], tmp_path: Path) -> None:
    with FakeOpenAIServer(responder()) as server:
        proc = _cli(["-m", "repeat=range(3)", "data.limit=1", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                     *overrides(server.url, stores)])
        _, stderr = proc.communicate(timeout=600)
        seeds = sorted(r["seed"] for r in server.requests)
    assert proc.returncode == 0, stderr[-2000:]
    assert seeds == [0, 1, 2]  # one call per repeat: none served from another repeat's cache slot
    (parent,) = _parents(stores["tracking.uri"])
    assert sorted(c.info.run_name for c in _children(stores["tracking.uri"], parent.info.run_id)) == [
        "repeat=0", "repeat=1", "repeat=2"]
    from runner.report import make_report
    from runner.report_config import build_report_config

    raw = composed_report(f"tracking.uri={stores['tracking.uri']}", f"out={tmp_path / 'r'}", "plots=false")
    report = make_report(build_report_config(raw))
    csv_text = (tmp_path / "r" / "table.csv").read_text()
    assert "repeat" not in csv_text.splitlines()[0] and ",3," in csv_text  # one cell of 3 pooled runs
    assert report is not None
