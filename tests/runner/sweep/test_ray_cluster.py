"""A sweep on a Ray cluster of two nodes logging to ``mlflow server`` on PostgreSQL behind
MLflow's basic-auth app, all started here on loopback ports, as docs/guides/across-machines.md
walks through it: the admin gives alice EDIT on her experiment, and each node signs in as her
from the environment of its ``ray start``. A worker node killed in the middle of the sweep
leaves its job's run KILLED or FAILED, never RUNNING or FINISHED (Ray runs the lost task again
on the other node, which marks the run KILLED); every cell ends with one FINISHED run, alice's;
the rerun skips every cell with no model call; and no password reaches the server's database.

The two nodes are two ``ray start`` on this machine, each one CPU, so the sweep's jobs spread
over both; killing the worker node's session is what a machine lost to the cluster looks like
to Ray.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.api.text import count_tokens
from runner.tracking.owners import HOST_TAG, RAY_NODE_TAG, owner_alive
from tests.conftest import missing
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.ports import free_port
from tests.helpers.tracking_server import ADMIN, MlflowServer, dump, mlflow_server, postgres
from tests.runner.sweep.test_ray_launcher import _ray_cli, _require_ray, _stop
from tests.runner.test_app import overrides
from tests.strategies.conftest import responder

ALICE, ALICE_PASSWORD = "alice", f"alice-{secrets.token_hex(8)}"
ADMIN_PASSWORD = f"admin-{secrets.token_hex(8)}"
STUDY = "alice-study"


class Node:
    """One ``ray start`` (head or worker) in a session of its own, stopped by killing it."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [*_ray_cli(), "start", *args, "--num-cpus=1", "--disable-usage-stats"],
            cwd=cwd,
            env=env,
            start_new_session=True,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out, _ = self.process.communicate(timeout=180)
        assert self.process.returncode == 0, out[-3000:]

    def kill(self) -> None:
        """Every process of the node's session (raylet, its workers), as a lost machine."""
        _stop(self.process.pid)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, Node, dict[str, str]]]:
    """(head address, the worker node, the environment the nodes and the sweep share)."""
    _require_ray()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    # A job's key is its machine's environment: the sweep passes none to Ray (docs: Across
    # machines, security). The batch test's loopback Anthropic server takes this one.
    env["ANTHROPIC_API_KEY"] = "test-anthropic-key"
    # The tracking server's user, exported before ``ray start`` as the docs' walk-through does
    # (a sqlite store ignores it).
    env["MLFLOW_TRACKING_USERNAME"], env["MLFLOW_TRACKING_PASSWORD"] = ALICE, ALICE_PASSWORD
    base = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths
    (base / "cwd").mkdir()
    port = free_port()
    head = Node(
        ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={base / 'tmp'}"],
        env,
        base / "cwd",
    )
    nodes = [head]
    try:
        nodes.append(Node([f"--address=127.0.0.1:{port}"], env, base / "cwd"))
        yield f"127.0.0.1:{port}", nodes[1], env
    finally:
        for node in reversed(nodes):
            node.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MlflowServer]:
    """The server behind basic auth, where the admin has made alice and her experiment (EDIT
    on it, READ elsewhere); this process then reads the server as alice."""
    from mlflow.server import get_app_client
    from mlflow.tracking import MlflowClient

    for module in ("psycopg", "flask_wtf"):
        if importlib.util.find_spec(module) is None:
            missing(f"{module} is not installed: pip install -e .[server]", "the server extra")
    with (
        postgres() as backend,
        mlflow_server(backend, tmp_path / "served", ADMIN_PASSWORD) as server,
    ):
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", ADMIN)
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", ADMIN_PASSWORD)
        auth = get_app_client("basic-auth", tracking_uri=server.url)
        auth.create_user(username=ALICE, password=ALICE_PASSWORD)
        experiment = MlflowClient(server.url).create_experiment(STUDY)
        auth.grant_user_permission(ALICE, "experiment", experiment, "EDIT")
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", ALICE)
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", ALICE_PASSWORD)
        yield server


def _sweep(
    address: str, env: dict[str, str], project: Path, url: str, served: MlflowServer
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runner",
            "-m",
            "hydra/launcher=ray",
            f"hydra.launcher.ray.init.address={address}",
            "strategy=hier",
            "chunk=256,384,512,768",
            "data.limit=1",
            "progress=false",
            f"hydra.sweep.dir={project / 'sweep'}",
            f"tracking.experiment={STUDY}",
            *overrides(url, {"tracking.uri": served.url, "cache.dir": str(project / "cache")}),
        ],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _children(url: str, name: str = STUDY) -> list[Any]:
    """The jobs' runs in experiment ``name`` (none before the sweep has opened it)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(url)
    experiment = client.get_experiment_by_name(name)
    if experiment is None:  # the sweep has not opened its parent yet
        return []
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    return [r for r in runs if r.data.tags.get("runner.kind") != "sweep"]


def test_a_lost_node_leaves_its_job_killed_and_the_sweep_completes_each_cell_once(
    cluster: tuple[str, Node, dict[str, str]],
    served: MlflowServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    address, worker, env = cluster
    project = tmp_path / "project"
    project.mkdir()
    with FakeOpenAIServer(responder(), latency_s=0.5) as server:
        sweep = _sweep(address, env, project, server.url, served)
        try:
            # both nodes have a job with its run open (one CPU each): the worker node goes
            deadline = time.monotonic() + 300
            while sum(r.info.status == "RUNNING" for r in _children(served.url)) < 2:
                assert sweep.poll() is None and time.monotonic() < deadline, "no two jobs at once"
                time.sleep(0.2)
            worker.kill()
            _, stderr = sweep.communicate(timeout=900)
        finally:
            sweep.kill()  # no-op once it has ended
        first = len(server.requests)
        rerun = _sweep(address, env, project, server.url, served)
        _, again_err = rerun.communicate(timeout=900)
        again = len(server.requests) - first
    assert sweep.returncode == 0, stderr[-4000:]
    runs = _children(served.url)
    statuses = sorted(r.info.status for r in runs)
    assert "RUNNING" not in statuses, statuses
    finished = [r for r in runs if r.info.status == "FINISHED"]
    assert sorted(r.data.params["chunk"] for r in finished) == ["256", "384", "512", "768"]
    lost = [r for r in runs if r.info.status != "FINISHED"]
    assert lost and {r.info.status for r in lost} <= {"KILLED", "FAILED"}, statuses
    assert rerun.returncode == 0, again_err[-4000:]
    assert again == 0 and len(_children(served.url)) == len(runs)
    assert {r.info.user_id for r in runs} == {ALICE}  # each node signed in as her
    rows = dump(served.backend_uri)
    assert all(r.info.run_id in rows for r in runs)
    for secret in (ALICE_PASSWORD, ADMIN_PASSWORD, env["RAY_AUTH_TOKEN"]):
        assert secret not in rows
    # Here both nodes are one host, so the lost job's pid told it was gone. On two machines
    # Ray tells: the run names its node, which the cluster reports dead, and a process on the
    # cluster takes a run of another host on that node for gone.
    tags = lost[0].data.tags
    assert f"(Ray node {tags[RAY_NODE_TAG]})" in tags["failure"]
    monkeypatch.setenv("RAY_AUTH_MODE", env["RAY_AUTH_MODE"])
    monkeypatch.setenv("RAY_AUTH_TOKEN", env["RAY_AUTH_TOKEN"])
    import ray

    ray.init(address=address, log_to_driver=False)
    try:
        dead = {n["NodeID"] for n in ray.nodes() if not n["Alive"]}
        assert tags[RAY_NODE_TAG] in dead
        elsewhere = {**tags, HOST_TAG: "another-machine"}
        assert not owner_alive(elsewhere)
        live = next(r for r in finished if r.data.tags[RAY_NODE_TAG] not in dead)
        assert owner_alive({**live.data.tags, HOST_TAG: "another-machine"})
    finally:
        ray.shutdown()


def test_two_jobs_on_two_nodes_stop_together_at_the_sweep_budget(
    cluster: tuple[str, Node, dict[str, str]], tmp_path: Path
) -> None:
    """``budget.sweep_usd`` holds across machines: both nodes' jobs add to one Ray actor."""
    from mlflow.tracking import MlflowClient

    from runner.llm.rate_ray import NAMESPACE, spend_name

    address, _, env = cluster
    project = tmp_path / "project"
    project.mkdir()
    uri = f"sqlite:///{project / 'mlflow.db'}"  # a new store: the sweep makes it (locked)
    sweep_dir = project / "sweep"
    with FakeOpenAIServer(responder(), latency_s=0.3) as server:
        sweep = subprocess.run(
            [
                sys.executable, "-m", "runner", "-m", "hydra/launcher=ray",
                f"hydra.launcher.ray.init.address={address}",
                "strategy=hier", "chunk=256,384", "data.limit=1", "progress=false",
                "model.concurrency=1", "model.input_cost_per_token=0.0001",
                "budget.sweep_usd=0.5", f"hydra.sweep.dir={sweep_dir}",
                *overrides(server.url, {"tracking.uri": uri, "cache.dir": str(project / "cache")}),
            ],
            cwd=project, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        asked = list(server.requests)
    assert sweep.returncode != 0 and "budget.sweep_usd=0.5 reached" in sweep.stderr
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("summarization")
    runs = [
        r
        for r in client.search_runs([experiment.experiment_id])
        if r.data.tags.get("runner.kind") != "sweep"
    ]
    assert len({r.data.tags[RAY_NODE_TAG] for r in runs}) == 2  # one job on each node
    assert not (sweep_dir / "spend.json").exists()  # no file ledger: the actor holds it
    read = (  # in a process of its own: one Ray client per process (the other test has one)
        "import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False); "
        "print(ray.get(ray.get_actor(sys.argv[2], namespace=sys.argv[3]).add.remote(0.0)))"
    )
    name = spend_name(str(sweep_dir.resolve()))
    done = subprocess.run(
        [sys.executable, "-c", read, address, name, NAMESPACE],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    total = float(done.stdout.strip().splitlines()[-1])
    per_call = [0.0001 * sum(count_tokens(m["content"]) for m in r["messages"]) for r in asked]
    assert per_call and total >= 0.5
    # each job stops before its next call once the total is reached: beyond it, at most the
    # call each of the two jobs had in flight
    assert total <= 0.5 + 2 * max(per_call)
    assert len(asked) < 30  # far fewer than the two cells' full work


def test_a_batch_submitted_on_a_lost_node_is_collected_not_sent_again(
    cluster: tuple[str, Node, dict[str, str]], tmp_path: Path
) -> None:
    """A job waiting for its batch on the worker node is lost; Ray runs its cell again on the
    head, which finds the batch in the ledger beside the shared response cache (cache.dir, a
    folder both nodes see) and collects it: no request travels twice, none online. (A sweep's
    jobs pool their requests into one batch through the ledger's spool: both cells' are in it.)"""
    from mlflow.tracking import MlflowClient

    from tests.helpers.anthropic_server import FakeAnthropicServer
    from tests.runner.llm.batch.test_batch_job import (
        BATCH,
        KEY,
        SUMMARIES,
        expected_booookscore,
        items,
        judge,
        sentence_count,
    )

    address, worker, env = cluster
    project = tmp_path / "project"
    project.mkdir()
    data = project / "summaries.json"
    data.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    uri = f"sqlite:///{project / 'mlflow.db'}"  # a new store: the sweep makes it (locked)
    with FakeAnthropicServer(judge, api_key=KEY, never_end=True) as server:
        sweep = subprocess.Popen(
            [
                sys.executable, "-m", "runner", "-m", "hydra/launcher=ray",
                f"hydra.launcher.ray.init.address={address}", "judge.temperature=0.1,0.2",
                f"hydra.sweep.dir={project / 'sweep'}",
                *items(server, data, project, "cache", *BATCH),
            ],
            cwd=project, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 300
            while not _both_waiting(project, uri, 2 * sentence_count()):
                if sweep.poll() is not None:
                    raise AssertionError(sweep.communicate()[1][-3000:])
                assert time.monotonic() < deadline, f"{len(server.batches)} batches, not waiting"
                time.sleep(0.2)
            worker.kill()
            server.never_end = False
            _, stderr = sweep.communicate(timeout=600)
        finally:
            sweep.kill()
        sent = [custom for batch in server.batches for custom in batch.custom_ids]
        online = list(server.online_requests)
    assert sweep.returncode == 0, stderr[-4000:]
    assert len(server.batches) == 1 and len(sent) == len(set(sent))  # nothing sent twice
    assert online == []
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("summarization")
    runs = [
        r
        for r in client.search_runs([experiment.experiment_id])
        if r.data.tags.get("runner.kind") != "sweep"
    ]
    finished = [r for r in runs if r.info.status == "FINISHED"]
    assert sorted(r.data.params["judge.temperature"] for r in finished) == ["0.1", "0.2"]
    lost = [r for r in runs if r.info.status != "FINISHED"]
    assert lost and {r.info.status for r in lost} <= {"KILLED", "FAILED"}
    again = next(
        r for r in finished
        if r.data.params["judge.temperature"] == lost[0].data.params["judge.temperature"]
    )  # fmt: skip
    # its answers came from the one batch (collected into the shared cache), never sent again
    assert again.data.metrics["booookscore/score"] == pytest.approx(expected_booookscore())
    assert again.data.tags[RAY_NODE_TAG] != lost[0].data.tags[RAY_NODE_TAG]  # on the other node


def _both_waiting(project: Path, uri: str, requests: int) -> bool:
    """Both cells' requests in a live batch, and a run of each open on its own node."""
    from mlflow.tracking import MlflowClient

    from runner.llm.batch.ledger import Ledger

    held = sum(len(e.requests) for e in Ledger(project / "cache").live())
    if not (project / "mlflow.db").exists():
        # Not opened before the sweep has made it: MLflow's client would make and migrate it
        # itself, unlocked, while the sweep does (sqlite's "duplicate column name").
        return False
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("summarization")
    if held < requests or experiment is None:
        return False
    running = client.search_runs([experiment.experiment_id], "attributes.status = 'RUNNING'")
    nodes = {
        r.data.tags.get(RAY_NODE_TAG) for r in running if r.data.tags.get("runner.kind") != "sweep"
    }
    return len(nodes - {None}) == 2
