"""A store a command cannot use is one line before any model call (issue 42, item 1).

An ``http://`` tracking server that does not answer (MLflow itself retries it for minutes,
then prints a traceback), and a sqlite store on a network filesystem (NFS, SMB: SQLite's
locks are unsafe there with several writers). The job and a sweep's cells check both in the
preflight; the report, the viewer and ``annotate`` check the server. A user and password in
the URI never reach the line.
"""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import types
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from runner.annotate.__main__ import main as annotate
from runner.tracking import store
from runner.tracking.store import filesystem_of, networked_store, shown, unusable_server
from runner.view import cli as view
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.in_process import run_in_process

MOUNTS = """\
/dev/nvme0n1p2 / ext4 rw,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
fileserver:/export/lab /mnt/lab nfs4 rw,vers=4.2 0 0
//nas/share /mnt/nas\\040drive cifs rw 0 0
tmpfs /mnt/lab/scratch tmpfs rw 0 0
"""


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_filesystem_is_the_longest_mount_point_holding_the_path() -> None:
    assert filesystem_of(Path("/mnt/lab/runs/mlruns/mlflow.db"), MOUNTS) == "nfs4"
    assert filesystem_of(Path("/mnt/lab"), MOUNTS) == "nfs4"
    assert filesystem_of(Path("/mnt/lab/scratch/mlflow.db"), MOUNTS) == "tmpfs"  # nested mount
    assert filesystem_of(Path("/mnt/labs/mlflow.db"), MOUNTS) == "ext4"  # not /mnt/lab
    assert filesystem_of(Path("/mnt/nas drive/mlflow.db"), MOUNTS) == "cifs"  # \040 is a space
    assert filesystem_of(Path("/home/me/mlruns/mlflow.db"), MOUNTS) == "ext4"


def test_the_credentials_of_a_uri_are_never_shown() -> None:
    assert shown("http://alice:s3cret@127.0.0.1:5000/x") == "http://127.0.0.1:5000/x"
    assert shown("https://token@mlflow.lab.org") == "https://mlflow.lab.org"
    assert shown("sqlite:////tmp/mlflow.db") == "sqlite:////tmp/mlflow.db"


class _LoginFirst(http.server.BaseHTTPRequestHandler):
    """A server that refuses every request without a user (401), /health included."""

    def do_GET(self) -> None:  # noqa: N802 - the handler's API
        self.send_response(401)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_refusing_every_request_and_silence_are_one_line_each() -> None:
    with http.server.HTTPServer(("127.0.0.1", 0), _LoginFirst) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(urllib.error.HTTPError):  # the server is there: it refuses
            urllib.request.urlopen(base + "/health", timeout=5)
        line = unusable_server(base)  # there, but asking for a user: that is the line
        assert line is not None and "asks for a user (401) and none was given" in line
        assert "ray start" not in line
        with pytest.MonkeyPatch.context() as patch:  # a job on Ray: ray.init done, by the launcher
            patch.setitem(sys.modules, "ray", types.SimpleNamespace(is_initialized=lambda: True))
            on_ray = unusable_server(base)
        # the user exported in the sweep's shell is not what its jobs on Ray have
        assert on_ray is not None and on_ray.startswith(line)
        assert "exported before each machine's `ray start`" in on_ray
        server.shutdown()
    port = closed_port()
    line = unusable_server(f"http://127.0.0.1:{port}", "tracking.uri")
    assert line is not None and line.startswith(f"tracking.uri=http://127.0.0.1:{port}: no MLflow")
    assert f"mlflow server --host 127.0.0.1 --port {port}" in line
    assert unusable_server("sqlite:////tmp/x.db") is None


def _job(tmp_path: Path, uri: str) -> tuple[int, list[str], int]:
    """``python -m runner`` with ``tracking.uri=uri`` against a fake model: exit, lines, calls."""
    with FakeOpenAIServer() as server:
        server.served_models = ["fake-model"]
        done = run_in_process(
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "model.model=openai/fake-model",
            "metrics=stats",
            "data.limit=1",
            f"tracking.uri={uri}",
            cwd=tmp_path,
        )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return done.returncode, lines, len(server.requests)


def test_a_job_against_a_silent_server_is_one_line_before_any_model_call(tmp_path: Path) -> None:
    port = closed_port()
    code, lines, calls = _job(tmp_path, f"http://alice:s3cret@127.0.0.1:{port}")
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: tracking.uri=http://127.0.0.1:{port}: no MLflow server")
    assert "s3cret" not in lines[0] and "alice" not in lines[0]
    assert calls == 0 and not (tmp_path / "mlruns").exists()


def test_a_sweep_against_a_silent_server_is_one_line_and_no_parent(tmp_path: Path) -> None:
    port = closed_port()
    with FakeOpenAIServer() as server:
        server.served_models = ["fake-model"]
        done = run_in_process(
            "-m",
            "chunk=512,1024",
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "model.model=openai/fake-model",
            "metrics=stats",
            "data.limit=1",
            f"tracking.uri=http://127.0.0.1:{port}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            cwd=tmp_path,
        )
        assert server.requests == []
    assert done.returncode == 2, done.stderr[-2000:]
    assert "no MLflow server answers there" in done.stderr and "Traceback" not in done.stderr


def test_a_store_on_a_network_filesystem_is_one_line_before_any_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine's mount table, as a lab's NFS home would have it (the fork reads it)."""
    table = tmp_path / "mounts"
    table.write_text(f"/dev/sda1 / ext4 rw 0 0\nfiler:/home {tmp_path} nfs4 rw 0 0\n")
    monkeypatch.setattr(store, "MOUNTS", table)
    db = tmp_path / "mlruns" / "mlflow.db"
    code, lines, calls = _job(tmp_path, f"sqlite:///{db}")
    assert code == 2 and len(lines) == 1, lines
    assert f"{db.parent} is on a network filesystem (nfs4)" in lines[0]
    assert "local disk" in lines[0] and "tracking.uri=http://" in lines[0]
    assert calls == 0 and not db.exists()
    table.write_text("/dev/sda1 / ext4 rw 0 0\n")  # the same store on a local disk is fine
    assert networked_store(f"sqlite:///{db}") is None


def test_the_read_commands_name_a_silent_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"http://127.0.0.1:{closed_port()}"
    assert view.main(lambda client, run_id: "", ["latest", f"tracking.uri={uri}"]) == 2
    assert "no MLflow server answers there" in capsys.readouterr().err
    code = annotate(
        ["export", "coherence", "0" * 32, "--out", str(tmp_path), "--tracking-uri", uri]
    )
    assert code == 2 and "no MLflow server answers there" in capsys.readouterr().err


def test_the_report_names_a_silent_server(tmp_path: Path) -> None:
    """The report's check runs where its module starts (``python -m runner.report``)."""
    uri = f"http://127.0.0.1:{closed_port()}"
    done = subprocess.run(
        [sys.executable, "-m", "runner.report", f"tracking.uri={uri}", f"out={tmp_path}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith(f"error: tracking.uri={uri}: no MLflow server answers there")
