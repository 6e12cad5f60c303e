"""Stopping a sweep (issue 31): SIGINT or SIGTERM to the sweep's process, or Ctrl-C in its
terminal (SIGINT to its whole process group), under the basic, joblib and Ray launchers.

Each stop must: end the sweep at once (while its calls are still unanswered) with 130
(SIGINT) or 143 (SIGTERM); print one
"stopped" line and none of joblib's "segmentation fault" text; leave no process of the sweep's
session; leave the parent and every started child KILLED (none RUNNING, none FAILED); send no
model call after it; and the same command must then finish the sweep. Also the launcher
settings that cannot work (``hydra.launcher.n_jobs``): one line, exit 2, nothing recorded.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.processes import session_processes
from tests.runner.sweep import test_ray_launcher
from tests.runner.test_app import all_runs, overrides
from tests.strategies.conftest import responder

REPO = Path(__file__).resolve().parents[3]
CELLS = ("chunk=512,768,1024,2048",)
"""Four cells of one document each: baseline sends one call a document (metrics=stats)."""
SLOW_S = 120.0
"""The server's answer time while the sweep is to be stopped: every job is mid-call, and a stop
that waited for its calls would still be waiting when ``STOP_TIMEOUT_S`` runs out."""
STOP_TIMEOUT_S = 30
"""How long the stopped sweep may take to exit before the test fails (a hang guard, not a
figure: the test checks that its calls were still unanswered when it exited)."""
JOBLIB = ("hydra/launcher=joblib", "hydra.launcher.n_jobs=2")


def _launch(
    args: list[str],
    folder: Path,
    tag: str,
    env: dict[str, str] | None = None,
    pipe: bool = False,
) -> subprocess.Popen[bytes]:
    """``python -m runner`` in a session of its own (its pid is its process group's id).

    ``pipe``: both its streams through ``2>&1 | tee``, as a researcher keeps a log (a shell
    leads the group, and Ctrl-C stops tee with the runner: its output's pipe closes under it).
    """
    command = [sys.executable, "-m", "runner", *args]
    if pipe:
        line = f"{shlex.join(command)} 2>&1 | tee {shlex.quote(str(folder / f'{tag}.tee'))}"
        command = ["sh", "-c", line]
    with open(folder / f"{tag}.out", "wb") as out, open(folder / f"{tag}.err", "wb") as err:
        return subprocess.Popen(
            command,
            cwd=REPO,
            stdout=out,
            stderr=err,
            env={**(env or os.environ), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            start_new_session=True,
        )


def _sweep_args(server: FakeOpenAIServer, folder: Path, launcher: tuple[str, ...]) -> list[str]:
    stores = {
        "tracking.uri": f"sqlite:///{folder / 'mlflow.db'}",
        "cache.dir": str(folder / "cache"),
    }
    return [
        "-m",
        *launcher,
        *CELLS,
        "strategy=baseline",
        "data.limit=1",
        "progress=false",
        f"hydra.sweep.dir={folder / 'sweep'}",
        *overrides(server.url, stores),
    ]


def _wait_for(
    condition: Callable[[], bool], timeout_s: float, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc.poll() is None, "the sweep ended before it was stopped"
        assert time.monotonic() < deadline, "the sweep never got to its model calls"
        time.sleep(0.05)


def _kinds(uri: str) -> tuple[Any, list[Any]]:
    """(the sweep's parent run, its children)."""
    runs = all_runs(uri, parents=True)
    (parent,) = [r for r in runs if r.data.tags.get("runner.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    return parent, children


def stop_and_resume(
    folder: Path,
    launcher: tuple[str, ...],
    send: Callable[[int], None],
    expected_exit: int,
    busy_jobs: int,
    env: dict[str, str] | None = None,
    pipe: bool = False,
) -> None:
    """Start a 4-cell sweep, stop it once ``busy_jobs`` calls are in flight, check that it
    ended before they were answered and what the stop left, then rerun the same command and
    check that it finishes."""
    with FakeOpenAIServer(responder(), latency_s=SLOW_S) as server:
        args = _sweep_args(server, folder, launcher)
        proc = _launch(args, folder, "stopped", env, pipe)
        try:
            _wait_for(lambda: server.in_flight >= busy_jobs, 400, proc)
            send(proc.pid)
            code = proc.wait(timeout=STOP_TIMEOUT_S)
            unanswered = server.in_flight
            left = session_processes(proc.pid)
            deadline = time.monotonic() + 5
            while left and time.monotonic() < deadline:  # loky's tracker: gone with its pipe
                time.sleep(0.1)
                left = session_processes(proc.pid)
        finally:
            for pid in session_processes(proc.pid):
                os.kill(pid, signal.SIGKILL)
        calls = len(server.requests)
        time.sleep(1.0)
        assert len(server.requests) == calls, "a job went on calling the model after the stop"
        stderr = (folder / "stopped.tee" if pipe else folder / "stopped.err").read_text()
        assert code == expected_exit, stderr[-3000:]  # through a pipe: the shell's, tee's
        assert unanswered >= busy_jobs, "the sweep waited for its calls' answers before it ended"
        assert left == [], f"processes left behind: {left}"
        stops = [line for line in stderr.splitlines() if "stopped" in line]
        if not pipe:  # through a pipe, the line went to the tee that the same Ctrl-C ended
            assert len(stops) == 1 and "KILLED" in stops[0], stderr[-3000:]
        assert "segmentation fault" not in stderr and "Traceback" not in stderr, stderr[-3000:]
        uri = f"sqlite:///{folder / 'mlflow.db'}"
        parent, children = _kinds(uri)
        assert parent.info.status == "KILLED"
        assert len(children) >= busy_jobs
        assert {c.info.status for c in children} == {"KILLED"}, [c.info.status for c in children]

        server.latency_s = 0.0
        rerun = _launch(args, folder, "rerun", env)
        assert rerun.wait(timeout=300) == 0, (folder / "rerun.err").read_text()[-3000:]
    again, children = _kinds(uri)
    assert again.info.run_id == parent.info.run_id and again.info.status == "FINISHED"
    finished = [c for c in children if c.info.status == "FINISHED"]
    assert sorted(c.data.params["chunk"] for c in finished) == ["1024", "2048", "512", "768"]


def _to_pid(signum: int) -> Callable[[int], None]:
    return lambda pid: os.kill(pid, signum)


def _to_group(signum: int) -> Callable[[int], None]:
    """Ctrl-C in a terminal: the signal to every process of the foreground process group."""
    return lambda pid: os.killpg(pid, signum)


STOPS = {
    "kill-INT": (_to_pid(signal.SIGINT), 130),
    "kill-TERM": (_to_pid(signal.SIGTERM), 143),
    "ctrl-C": (_to_group(signal.SIGINT), 130),
}


@pytest.mark.parametrize("stop", list(STOPS))
def test_a_joblib_sweep_stops_killed_at_once_and_resumes(stop: str, tmp_path: Path) -> None:
    send, code = STOPS[stop]
    stop_and_resume(tmp_path, JOBLIB, send, code, busy_jobs=1)


@pytest.mark.parametrize("stop", ["kill-TERM", "ctrl-C"])
def test_a_basic_sweep_stops_killed_at_once_and_resumes(stop: str, tmp_path: Path) -> None:
    send, code = STOPS[stop]
    stop_and_resume(tmp_path, (), send, code, busy_jobs=1)


def test_a_joblib_sweep_piped_to_tee_stops_killed_on_ctrl_c(tmp_path: Path) -> None:
    """``python -m runner -m ... 2>&1 | tee log`` and Ctrl-C: tee dies with the runner, whose
    writes to the closed pipe (its "stopped" line) must not turn the stop into a failure:
    the parent and the children end KILLED, as without the pipe."""
    sigint = -signal.SIGINT  # the shell leading the pipe dies of the signal, as a terminal's does
    stop_and_resume(tmp_path, JOBLIB, _to_group(signal.SIGINT), sigint, busy_jobs=1, pipe=True)


ray_head = test_ray_launcher.ray_head
"""A local Ray head of the test's own (``ray start --head``), as the Ray launcher's test makes."""


def test_a_ray_sweep_stops_killed_at_once_and_resumes(
    ray_head: tuple[str, Path, dict[str, str]], tmp_path: Path
) -> None:
    address, _, env = ray_head
    ray = ("hydra/launcher=ray", f"hydra.launcher.ray.init.address={address}")
    stop_and_resume(tmp_path, ray, _to_pid(signal.SIGINT), 130, busy_jobs=1, env=env)


def _refused(args: list[str], tmp_path: Path) -> str:
    with FakeOpenAIServer(responder()) as server:
        proc = _launch(_sweep_args(server, tmp_path, ()) + args, tmp_path, "refused")
        code = proc.wait(timeout=120)
        assert server.requests == []
    stderr = (tmp_path / "refused.err").read_text()
    assert code == 2, stderr[-3000:]
    assert not (tmp_path / "mlflow.db").exists(), "the refused sweep created a store"
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def test_n_jobs_0_is_one_line_and_nothing_is_recorded(tmp_path: Path) -> None:
    line = _refused(["hydra/launcher=joblib", "hydra.launcher.n_jobs=0"], tmp_path)
    assert line.startswith("error: hydra.launcher.n_jobs=0 runs no job") and "n_jobs=2" in line


def test_n_jobs_without_the_joblib_launcher_names_the_launcher_to_add(tmp_path: Path) -> None:
    line = _refused(["hydra.launcher.n_jobs=2"], tmp_path)
    assert line.startswith("error: hydra.launcher.n_jobs is a setting of the joblib launcher")
    assert "add hydra/launcher=joblib" in line
