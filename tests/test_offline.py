"""No network traffic at import or start-up, whichever way the package is entered.

A ``sitecustomize`` in a fresh interpreter records every attempt to resolve or connect to
a host other than the loopback and refuses it; the test then fails on any attempt. Before
the fix, ``import runner.llm.local.model`` from a notebook made litellm fetch its price map
from GitHub (three tries).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.ui import JOB_EXECUTION
from tests.helpers.fake_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[1]

GUARD = r"""
import json, os, socket

_LOG = os.environ["NET_GUARD_LOG"]
_LOOPBACK = {"127.0.0.1", "localhost", "::1", None, ""}


def _note(kind, host):
    with open(_LOG, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"kind": kind, "host": str(host)}) + "\n")
    raise OSError(f"network blocked by the test: {kind} {host}")


_getaddrinfo = socket.getaddrinfo


def getaddrinfo(host, *args, **kwargs):
    name = host.decode() if isinstance(host, bytes) else host
    if name not in _LOOPBACK:
        _note("resolve", name)
    return _getaddrinfo(host, *args, **kwargs)


_connect = socket.socket.connect


def connect(self, address):
    host = address[0] if isinstance(address, tuple) else None
    if self.family in (socket.AF_INET, socket.AF_INET6) and host not in _LOOPBACK:
        _note("connect", host)
    return _connect(self, address)


socket.getaddrinfo = getaddrinfo
socket.socket.connect = connect
"""


def _guarded(tmp_path: Path) -> tuple[dict[str, str], Path]:
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    log = tmp_path / "net.jsonl"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LITELLM_LOCAL_MODEL_COST_MAP", "MLFLOW_DISABLE_TELEMETRY", JOB_EXECUTION)
    }
    env.update(PYTHONPATH=os.pathsep.join([str(guard), str(REPO)]), NET_GUARD_LOG=str(log))
    return env, log


def _command_line(pid: int) -> str:
    """A process's command line, '' once it has ended."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _attempts(log: Path) -> list[dict[str, str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_the_guard_catches_an_outbound_connection(tmp_path: Path) -> None:
    env, log = _guarded(tmp_path)
    code = (
        "import socket\ntry:\n    socket.create_connection(('example.org', 80), timeout=1)\n"
        "except OSError:\n    pass"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    assert _attempts(log) and _attempts(log)[0]["host"] == "example.org"


def test_importing_every_module_opens_no_connection(tmp_path: Path) -> None:
    env, log = _guarded(tmp_path)
    modules = sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for package in ("runner", "strategies", "metrics")
        for p in (REPO / package).rglob("*.py")
    )
    # runner.llm.local.model first, as a notebook would: it imports litellm directly.
    code = "import importlib\nimport runner.llm.local.model\n" + "".join(
        f"importlib.import_module({m!r})\n" for m in modules
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _attempts(log) == []


@pytest.mark.parametrize(
    "entry", [["-m", "runner"], ["-c", "from runner.__main__ import cli; cli()"]]
)
def test_a_whole_run_talks_only_to_its_loopback_model(tmp_path: Path, entry: list[str]) -> None:
    env, log = _guarded(tmp_path)
    with FakeOpenAIServer() as server:
        args = [
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "judge=openai_compatible",
            f"judge.api_base={server.url}",
            "metrics=paper",
            "data.limit=1",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"cache.dir={tmp_path / 'cache'}",
            f"hydra.run.dir={tmp_path / 'out'}",
        ]
        done = subprocess.run(
            [sys.executable, *entry, *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert server.requests, "the run made no model call"
    assert _attempts(log) == []


def test_the_mlflow_ui_command_starts_offline_without_retries(tmp_path: Path) -> None:
    """``python -m runner.ui`` serves the store with no attempt to reach the internet
    (plain ``mlflow ui`` resolves its telemetry host and retries litellm's price map); it
    prints its links only once the UI answers (they came about 16 s before it did, and the
    first click was refused), it starts no MLflow job runner (eight ``huey_consumer``
    processes the runner does not use), and SIGTERM ends it and every process it started
    (those consumers once outlived it)."""
    import signal
    import socket
    import urllib.request

    from runner.tracking.writer import Tracker
    from tests.helpers.processes import session_processes

    env, log = _guarded(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    (tmp_path / "mlruns").mkdir()
    tracker = Tracker(store, "summarization", tmp_path / "mlruns" / "artifacts")
    tracker.start("a run to link to", {})
    tracker.finish("FINISHED")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runner.ui",
            "--backend-store-uri",
            store,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stderr is not None
    try:
        seen: list[str] = []
        while not seen or not seen[-1].startswith("runner.ui: the UI is up"):
            line = process.stderr.readline().decode()  # MLflow's own lines come first
            assert line, "".join(seen)  # ended without printing the links
            seen.append(line)
        link = process.stderr.readline().decode()
        assert f"http://127.0.0.1:{port}/#/experiments/" in link, link
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            assert answer.status == 200  # up when the link is printed, not later
        started = session_processes(process.pid)
        assert len(started) >= 2, started  # runner.ui and MLflow's server (and its workers)
        commands = [_command_line(pid) for pid in started]
        assert not [c for c in commands if "mlflow.server.jobs" in c or "huey" in c], commands
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 128 + signal.SIGTERM
        assert session_processes(process.pid) == []  # nothing left serving or consuming
    finally:
        for pid in session_processes(process.pid):
            os.kill(pid, 9)
    assert _attempts(log) == []
