"""A shared tracking server, as a lab runs one: ``mlflow server`` on PostgreSQL with served
artifacts behind MLflow's basic-auth app (docs/guides/across-machines.md), both started here
on loopback ports.

A sweep of four cells is recorded there (a FINISHED parent, four FINISHED children, their
artifacts in the server's artifact folder), resumed with no model call, viewed, exported for
annotation, estimated from and reported with the command the sweep prints; neither the API
key nor the server's password reaches the database or an artifact; a job without a user, or
with a wrong password, is one line before any model call; and a server restarted in the
middle of a sweep loses nothing.
"""

from __future__ import annotations

import importlib.util
import secrets
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.annotate.__main__ import main as annotate
from runner.estimate.history import history
from runner.view.page import main as view_main
from tests.conftest import missing
from tests.helpers.artifacts import artifact_bytes
from tests.helpers.cli import REPO, runner_cli
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.in_process import run_in_process
from tests.helpers.tracking_server import ADMIN, MlflowServer, dump, mlflow_server, postgres
from tests.runner.test_app import overrides
from tests.strategies.conftest import responder

CELLS = ("strategy=baseline,hier", "chunk=512,1024", "data.limit=1")


PASSWORD = f"pw-{secrets.token_hex(8)}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """One PostgreSQL cluster and one ``mlflow server`` on it for the module's tests; every
    command of the module signs in as its admin, as MLflow's client does, from the environment."""
    for module in ("psycopg", "flask_wtf"):
        if importlib.util.find_spec(module) is None:
            missing(f"{module} is not installed: pip install -e .[server]", "the server extra")
    folder = tmp_path_factory.mktemp("served")
    with (
        postgres() as backend,
        mlflow_server(backend, folder, PASSWORD) as server,
        pytest.MonkeyPatch.context() as env,
    ):
        env.setenv("MLFLOW_TRACKING_USERNAME", ADMIN)
        env.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
        yield server


def _sweep(
    server: FakeOpenAIServer, served: MlflowServer, tmp: Path, experiment: str
) -> tuple[int, str]:
    stores = {"tracking.uri": served.url, "cache.dir": str(tmp / "cache")}
    args = [
        "-m",
        *CELLS,
        f"tracking.experiment={experiment}",
        f"hydra.sweep.dir={tmp / 'sweep'}",
        *overrides(server.url, stores),
    ]
    proc = runner_cli(args)
    _, stderr = proc.communicate(timeout=600)
    return proc.returncode, stderr


def _runs(url: str, experiment: str) -> tuple[list[Any], list[Any]]:
    """(sweep parents, jobs) of ``experiment`` on the server."""
    client = MlflowClient(url)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment} on the server"
    runs = client.search_runs([found.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("runner.kind") == "sweep"]
    return parents, [r for r in runs if r not in parents]


def _one_parent_four_finished_children(url: str, experiment: str) -> list[Any]:
    parents, jobs = _runs(url, experiment)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(jobs) == 4, [j.info.run_name for j in jobs]
    assert {j.info.status for j in jobs} == {"FINISHED"}
    assert {j.data.tags.get("mlflow.parentRunId") for j in jobs} == {parents[0].info.run_id}
    return jobs


def _summaries_served(url: str, served: MlflowServer, jobs: list[Any]) -> None:
    """Each job's summaries.json comes back through the server, from its artifact folder."""
    client = MlflowClient(url)
    for job in jobs:
        assert job.info.artifact_uri.startswith("mlflow-artifacts:/"), job.info.artifact_uri
        local = artifact_bytes(client, job.info.run_id, "summaries.json")
        stored = next(served.artifacts.rglob(f"{job.info.run_id}/artifacts/summaries.json"))
        assert local == stored.read_bytes()
        assert b"salt-and-copper" in local


def _job(
    served: MlflowServer, folder: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], int]:
    """One job on the sample's first story, logged to the server: its result and model calls."""
    folder.mkdir(exist_ok=True)
    with FakeOpenAIServer(responder()) as server:
        done = run_in_process(
            *overrides(server.url, {"tracking.uri": served.url}, "data.limit=1"),
            f"cache.dir={folder / 'cache'}",
            *extra,
            cwd=folder,
        )
    return done, len(server.requests)


def test_a_sweep_on_the_server_is_recorded_resumed_and_reported(
    served: MlflowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = f"sk-test-{secrets.token_hex(12)}"
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", key)  # the role's api_key_env
    with FakeOpenAIServer(responder(), latency_s=0.02) as server:
        code, stderr = _sweep(server, served, tmp_path, "shared")
        assert code == 0, stderr[-3000:]
        first_calls = len(server.requests)
        assert first_calls > 0 and {a for a in server.authorizations} == {f"Bearer {key}"}
        jobs = _one_parent_four_finished_children(served.url, "shared")
        _summaries_served(served.url, served, jobs)

        code, again = _sweep(server, served, tmp_path, "shared")  # resumed: every cell done
        assert code == 0, again[-3000:]
        assert len(server.requests) == first_calls  # no model call
    assert sorted(j.info.run_id for j in _runs(served.url, "shared")[1]) == sorted(
        j.info.run_id for j in jobs
    )  # and no new run

    # the viewer and the annotation export read a job's artifacts through the server
    job = jobs[0].info.run_id
    page = tmp_path / "viewer.html"
    assert view_main([job, f"tracking.uri={served.url}", f"out={page}"]) == 0
    assert "salt-and-copper" in page.read_text(encoding="utf-8")
    tasks = tmp_path / "tasks"
    assert (
        annotate(["export", "coherence", job, "--out", str(tasks), f"tracking.uri={served.url}"])
        == 0
    )
    assert "salt-and-copper" in (tasks / "tasks.json").read_text(encoding="utf-8")

    # an estimate against the server reads what its runs measured, as from a sqlite store
    measured = history(served.url, jobs[0].data.params["model.model"])
    assert (measured.runs, measured.calls) == (4, first_calls)
    assert measured.latency is not None and measured.overhead_s is not None

    # neither the key nor the server's password is in a row of its database or an artifact
    rows = dump(served.backend_uri)
    assert jobs[0].info.run_id in rows  # the dump holds the runs
    assert key not in rows and PASSWORD not in rows
    files = [p for p in served.artifacts.rglob("*") if p.is_file()]
    assert len(files) >= 4 * 3, files  # each job's summaries, scores, calls at least
    for path in files:
        assert key.encode() not in path.read_bytes(), path
        assert PASSWORD.encode() not in path.read_bytes(), path

    # the report's command as the sweep printed it reads the server's runs
    command = shlex.split(stderr.split("the tables: ")[1].splitlines()[0])
    assert f"tracking.uri={served.url}" in command
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, *command[1:], f"out={out}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = (out / "table.md").read_text(encoding="utf-8")
    assert f"Store: {served.url}. 4 runs averaged, 0 not." in table, table
    assert "| 512 |" in table and "| 1024 |" in table and "hier: Avg length" in table
    parent = _runs(served.url, "shared")[0][0]  # the report's files, logged through the server
    logged = MlflowClient(served.url).list_artifacts(parent.info.run_id, "report")
    assert "report/table.md" in {a.path for a in logged}


def test_a_server_restarted_mid_sweep_loses_nothing(served: MlflowServer, tmp_path: Path) -> None:
    answer = responder()
    calls = 0
    restarted = threading.Event()
    lock = threading.Lock()

    def restarting(request: dict[str, Any]) -> Any:
        """The last cell's first call waits while the tracking server restarts."""
        nonlocal calls
        with lock:
            calls += 1
            due = calls == 9  # baseline: 1 call (its second cell is cached); hier 512: 7
            if due:
                served.stop()
                served.start()
                restarted.set()
        return answer(request)

    with FakeOpenAIServer(restarting) as server:
        code, stderr = _sweep(server, served, tmp_path, "restarted")
    assert restarted.is_set(), "the sweep made fewer calls than planned; move the restart"
    assert code == 0, stderr[-3000:]
    jobs = _one_parent_four_finished_children(served.url, "restarted")
    _summaries_served(served.url, served, jobs)


@pytest.mark.parametrize("password", [None, "wrong"])
def test_a_job_the_server_refuses_is_one_line_before_any_model_call(
    served: MlflowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, password: str | None
) -> None:
    if password is None:
        monkeypatch.delenv("MLFLOW_TRACKING_USERNAME")
        monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD")
    else:
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", password)
    done, calls = _job(served, tmp_path)
    assert calls == 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, lines
    sent = "none was given" if password is None else "refused MLFLOW_TRACKING_USERNAME and"
    assert lines[0].startswith(f"error: tracking.uri={served.url}: the server asks for a user")
    assert sent in lines[0] and "MLFLOW_TRACKING_PASSWORD" in lines[0]
    assert PASSWORD not in done.stderr and (password is None or password not in lines[0])


def test_a_user_the_admin_adds_runs_jobs_in_the_experiment_it_may_edit(
    served: MlflowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docs' steps for a lab member: the admin adds a user and gives it EDIT on an
    experiment (MLflow's auth client); the user's job logs there, signed in as the user, and
    where the user may only read, the job is one line before any model call."""
    from mlflow.server import get_app_client

    auth = get_app_client("basic-auth", tracking_uri=served.url)  # as the admin (env)
    auth.create_user(username="alice", password="alice-pw-0123")
    experiment = MlflowClient(served.url).create_experiment("alice-study")
    auth.grant_user_permission("alice", "experiment", experiment, "EDIT")
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "alice-pw-0123")
    done, _ = _job(served, tmp_path, "strategy=baseline", "tracking.experiment=alice-study")
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = MlflowClient(served.url).search_runs([experiment])
    assert run.info.status == "FINISHED" and run.info.user_id == "alice"  # the UI's User
    # the job's own link to the runs table, not MLflow's two "View run/experiment" lines too
    assert "MLflow UI: open" in done.stdout and "View run" not in done.stdout
    assert "alice-pw-0123" not in dump(served.backend_uri)
    # where she may only read (the server's default), her job is one line, no run, no call
    done, calls = _job(served, tmp_path / "ro", "strategy=baseline", "tracking.experiment=Default")
    assert calls == 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, lines
    assert lines[0] == (
        f"error: tracking.uri={served.url}: the server does not let alice write to experiment "
        "'Default' (403); ask its admin for EDIT on it, or choose a tracking.experiment=NAME "
        "of your own (its creator may write to it)"
    )


def test_credentials_in_the_tracking_uri_reach_neither_the_server_nor_the_console(
    served: MlflowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tracking.uri=http://bob:<password>@host:port`` once put the password in the printed
    UI link, the run's ``overrides`` and note tags and its config.yaml, on the shared server."""
    from mlflow.server import get_app_client

    secret = f"bob-pw-{secrets.token_hex(6)}"
    auth = get_app_client("basic-auth", tracking_uri=served.url)  # as the admin (env)
    auth.create_user(username="bob", password=secret)
    experiment = MlflowClient(served.url).create_experiment("bob-study")
    auth.grant_user_permission("bob", "experiment", experiment, "EDIT")
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)  # the URI alone signs in
    address = served.url.split("://", 1)[1]
    with FakeOpenAIServer(responder()) as server:
        done = run_in_process(
            *overrides(server.url, {"tracking.uri": f"http://bob:{secret}@{address}"}),
            "data.limit=1",
            f"cache.dir={tmp_path / 'cache'}",
            "strategy=baseline",
            "tracking.experiment=bob-study",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    with monkeypatch.context() as admin:  # read back as the admin
        admin.setenv("MLFLOW_TRACKING_USERNAME", ADMIN)
        admin.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
        (run,) = MlflowClient(served.url).search_runs([experiment])
    assert run.info.status == "FINISHED" and run.info.user_id == "bob"
    assert secret not in done.stdout + done.stderr
    assert f"http://{address}" in done.stdout  # the link, without bob's user and password
    assert "bob:" not in done.stdout + done.stderr
    assert secret not in dump(served.backend_uri)
    for path in (p for p in served.artifacts.rglob("*") if p.is_file()):
        assert secret.encode() not in path.read_bytes(), path
