"""How a job ends: one failure cancels the rest, signals end the run KILLED, and a
sweep in one process gives each job its own endpoint limit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import AuthError
from tests.helpers.cli import runner_cli
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply, max_overlap
from tests.runner.test_app import all_runs, overrides, run
from tests.strategies.conftest import responder

REPO = Path(__file__).resolve().parents[3]
POISON = "POISONED"


def _three_docs(folder: Path) -> Path:
    folder.mkdir()
    paragraph = "The keeper climbed the stairs at dusk and lit the lamp for the ships. " * 6
    for name in ("a-good", "b-bad", "c-good"):
        marked = (POISON + " " if name == "b-bad" else "") + paragraph
        (folder / f"{name}.txt").write_text("\n\n".join([marked] * 12))
    return folder


def test_one_failing_document_cancels_the_others(stores: dict[str, str], tmp_path: Path) -> None:
    hier = responder()
    refused: list[float] = []

    def answer(request: dict[str, Any]) -> str | FakeReply:
        if POISON in str(request["messages"][-1]["content"]):
            refused.append(time.monotonic())
            return FakeReply("invalid api key", status=401)
        return hier(request)

    docs = _three_docs(tmp_path / "docs")
    with FakeOpenAIServer(answer, latency_s=0.3) as server:
        items = overrides(
            server.url,
            stores,
            "strategy=hier",
            "chunk=256",
            "data=dir",
            f"data.path={docs}",
            "model.concurrency=3",
            "strategy.postprocess=none",
        )
        with pytest.raises(AuthError):
            run(items)
        time.sleep(1.0)  # a call that started after the refusal would show up by now
        intervals = list(server.intervals)
    # Each document needs 6 level-0 calls and a merge (21 for the three). After the first
    # refusal, calls already waiting for a slot may still slip out within a moment; none
    # may start once the cancellation has had time to reach every thread.
    late = [start for start, _ in intervals if start > refused[0] + 0.15]
    assert late == [], f"{len(late)} calls started after the failure"
    assert len(intervals) < 12
    (failed,) = all_runs(stores["tracking.uri"])
    assert failed.info.status == "FAILED"
    assert failed.data.tags["failure"].startswith(
        "AuthError: model=openai_compatible: the API key was rejected"
    )


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_run_killed(
    stores: dict[str, str], tmp_path: Path, signum: int, code: int
) -> None:
    with FakeOpenAIServer(responder(), latency_s=1.0) as server:
        proc = runner_cli(
            [
                *overrides(
                    server.url,
                    stores,
                    "strategy=hier",
                    "chunk=256",
                    "data.limit=1",
                    "model.concurrency=1",
                ),
                f"hydra.run.dir={tmp_path / 'out'}",
            ]
        )
        deadline = time.monotonic() + 120
        while not server.requests and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert server.requests, "the job never called the model"
        started = time.monotonic()
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - started
    assert proc.returncode == code, stderr[-2000:]
    assert "the run is marked KILLED" in stderr
    assert stopped_in < 20  # it did not go on summarizing the document (dozens of 1 s calls)
    (killed,) = all_runs(stores["tracking.uri"])
    assert killed.info.status == "KILLED"
    assert killed.data.tags["failure"].split(":")[0] in ("Terminated", "KeyboardInterrupt")


def test_each_job_of_a_sweep_gets_its_own_endpoint_limit(
    stores: dict[str, str], tmp_path: Path
) -> None:
    with FakeOpenAIServer(latency_s=0.4) as server:
        # force: concurrency is not part of the fingerprint, so the second cell would be skipped
        proc = runner_cli(
            [
                "-m",
                *overrides(
                    server.url, stores, "model.concurrency=1,3", "cache.enabled=false", "force=true"
                ),
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
            ]
        )
        _, stderr = proc.communicate(timeout=600)
        intervals = list(server.intervals)
    assert proc.returncode == 0, stderr[-2000:]
    assert len(intervals) == 6  # three sample documents, one baseline call each, two jobs
    assert max(b for _, b in intervals[:3]) <= min(a for a, _ in intervals[3:]), "jobs overlapped"
    assert max_overlap(intervals[:3]) == 1  # model.concurrency=1
    assert max_overlap(intervals[3:]) == 3  # model.concurrency=3, not the first job's 1
    runs = all_runs(stores["tracking.uri"])
    assert sorted(r.data.params["model.concurrency"] for r in runs) == ["1", "3"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    client = MlflowClient(stores["tracking.uri"])
    assert len({client.get_run(r.info.run_id).data.tags["fingerprint"] for r in runs}) == 1


def test_ctrl_c_stops_the_job_even_when_the_parent_left_sigint_blocked(
    stores: dict[str, str], tmp_path: Path
) -> None:
    """A blocked signal mask is inherited: Python's multiprocessing resource tracker blocks
    SIGINT/SIGTERM while it starts, and a job launched then ignored Ctrl-C and ran to the end."""
    blocked = {signal.SIGINT, signal.SIGTERM}
    with FakeOpenAIServer(responder(), latency_s=1.0) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "runner",
                *overrides(
                    server.url,
                    stores,
                    "strategy=hier",
                    "chunk=256",
                    "data.limit=1",
                    "model.concurrency=1",
                ),
                f"hydra.run.dir={tmp_path / 'out'}",
            ],
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, blocked),
        )
        deadline = time.monotonic() + 120
        while not server.requests and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    (killed,) = all_runs(stores["tracking.uri"])
    assert killed.info.status == "KILLED"
