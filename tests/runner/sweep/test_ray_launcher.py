"""-m sweeps on a Ray cluster (``hydra/launcher=ray``, the hydra-ray-launcher plugin): a local
Ray head that the test starts (``ray start --head``) and stops, a 2-cell sweep against the
loopback fake server, and the MLflow store read back."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import missing
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.ports import free_port
from tests.helpers.processes import session_processes
from tests.runner.test_app import all_runs, overrides
from tests.strategies.conftest import responder


def _require_ray() -> None:
    for module, what in (
        ("ray", "ray"),
        ("hydra_plugins.hydra_ray_launcher", "hydra-ray-launcher"),
    ):
        if importlib.util.find_spec(module) is None:
            missing(
                f"{what} is not installed (README 'Launchers'): Ray launcher check not run",
                "ray and hydra-ray-launcher, which .ci/run installs",
            )


def _ray_cli() -> list[str]:
    script = Path(sys.executable).with_name("ray")
    return (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
    )


def _stop(sid: int) -> None:
    """``ray stop --force`` for this head only: SIGKILL the session that ``ray start`` opened
    (its daemons, and the workers they spawn, each in a process group of its own)."""
    deadline = time.monotonic() + 30
    while (pids := session_processes(sid)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


@pytest.fixture
def ray_head() -> Iterator[tuple[str, Path, dict[str, str]]]:
    """(HOST:PORT, the head's working folder, the environment that reaches it) of a 2-CPU Ray
    head of the test's own, with a token of its own: Ray 2.60 turns token authentication on
    for ``ray start`` when ~/.ray/auth_token exists (a local ``ray.init()`` writes one), and a
    client given an address then needs RAY_AUTH_MODE=token too."""
    _require_ray()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    # Short: Ray's unix sockets live under --temp-dir and their paths must fit in 107 bytes.
    base = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    (base / "cwd").mkdir()
    port = free_port()
    start = subprocess.Popen(
        [
            *_ray_cli(),
            "start",
            "--head",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            f"--temp-dir={base / 'tmp'}",
            "--disable-usage-stats",
        ],
        cwd=base / "cwd",
        env=env,
        start_new_session=True,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        out, _ = start.communicate(timeout=180)
        assert start.returncode == 0, out[-3000:]
        yield f"127.0.0.1:{port}", base / "cwd", env
    finally:
        start.kill()  # no-op once it has exited; its daemons keep its session
        start.wait()
        _stop(start.pid)
        shutil.rmtree(base, ignore_errors=True)


def test_a_ray_sweep_is_one_parent_with_its_children(
    ray_head: tuple[str, Path, dict[str, str]], tmp_path: Path
) -> None:
    """Default stores (no tracking.uri, no cache.dir): the jobs, in Ray's workers, resolve
    ./mlruns and ./.cache in the folder the sweep was launched from, as the parent did."""
    address, head_folder, env = ray_head
    project = tmp_path / "project"
    project.mkdir()
    with FakeOpenAIServer(responder()) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "runner",
                "-m",
                "hydra/launcher=ray",
                f"hydra.launcher.ray.init.address={address}",
                "strategy=hier",
                "chunk=512,1024",
                "data.limit=1",
                "progress=false",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
                *overrides(server.url, {}),
            ],
            cwd=project,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
        try:
            _, stderr = proc.communicate(timeout=600)
        finally:
            proc.kill()  # no-op once it has exited
    assert proc.returncode == 0, stderr[-3000:]
    uri = f"sqlite:///{project / 'mlruns' / 'mlflow.db'}"
    runs = all_runs(uri, parents=True)
    (parent,) = [r for r in runs if r.data.tags.get("runner.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.status == "FINISHED" and parent.data.params["sweep.keys"] == "chunk"
    assert len(runs) == 3 and len(children) == 2
    assert [c.info.status for c in children] == ["FINISHED", "FINISHED"]
    assert sorted(c.data.params["chunk"] for c in children) == ["1024", "512"]
    assert sorted(c.info.run_name for c in children) == [
        "chunk=1024",
        "chunk=512",
    ]  # the swept keys went too
    assert str(proc.pid) not in {
        c.data.tags["runner.pid"] for c in children
    }  # they ran in Ray's workers
    assert (project / ".cache" / "llm").is_dir()
    assert (
        sorted(p.name for p in head_folder.iterdir()) == []
    )  # no store or cache where Ray started
    calls = sum(int(c.data.metrics["calls"]) for c in children)
    assert calls > 0 and len(server.requests) == calls
    # joining a cluster, the sweep said which of its state is in folders of this machine
    (note,) = [line for line in stderr.splitlines() if line.startswith("note: on a Ray cluster")]
    assert f"cache.dir={(project / '.cache' / 'llm').resolve()} (response cache" in note
    assert f"tracking.uri={uri} (a file" in note and "budget.sweep_usd" not in note
    # conf's ray.yaml replaces the plugin's config on purpose: no screen of Hydra's warnings
    assert "validated against ConfigStore schema" not in stderr
