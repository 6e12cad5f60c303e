"""A throwaway PostgreSQL cluster and a real ``mlflow server`` on it, both on loopback ports.

What a lab runs to share one store between machines (docs/guides/across-machines.md), started
by the tests themselves: Debian's ``initdb`` and ``pg_ctl`` in a temporary folder (as the
``postgres`` user when the tests run as root, which PostgreSQL refuses to run as), and
``python -m mlflow server --backend-store-uri postgresql+psycopg://...`` with served
artifacts. Nothing listens beyond 127.0.0.1, and everything is removed at the end.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import missing
from tests.helpers.ports import free_port

DATABASE = "mlflow"
USER = "runner"


def postgres_bin(name: str) -> str | None:
    """A PostgreSQL server program (``initdb``, ``pg_ctl``, ``pg_dump``), or None."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def _as_owner() -> list[str]:
    """The command prefix that runs a server program as the cluster's owner."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"]  # Debian's package makes this user


@contextmanager
def postgres() -> Iterator[str]:
    """A new cluster with an empty database; yields its SQLAlchemy URI (no password: trust)."""
    initdb, pg_ctl = postgres_bin("initdb"), postgres_bin("pg_ctl")
    if not initdb or not pg_ctl:
        missing("PostgreSQL's initdb/pg_ctl are not installed", "Debian's postgresql (.ci/run)")
    assert initdb and pg_ctl
    # Not pytest's tmp_path: its parents are closed to the postgres user.
    base = Path(tempfile.mkdtemp(prefix="runner-pg-"))
    data, port = base / "data", free_port()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    owner = _as_owner()
    try:
        subprocess.run(
            [*owner, initdb, "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
        )
        options = f"-h 127.0.0.1 -p {port} -k {base} -c fsync=off"
        log = str(base / "log")
        subprocess.run(
            [*owner, pg_ctl, "-D", str(data), "-l", log, "-o", options, "-w", "start"],
            check=True,
            capture_output=True,
        )
        _create_database(port)
        yield f"postgresql+psycopg://{USER}@127.0.0.1:{port}/{DATABASE}"
    finally:
        subprocess.run(
            [*owner, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(base, ignore_errors=True)


def _create_database(port: int) -> None:
    import psycopg

    with psycopg.connect(
        host="127.0.0.1", port=port, user=USER, dbname="postgres", autocommit=True
    ) as connection:
        connection.execute(f"CREATE DATABASE {DATABASE}")


def dump(backend_uri: str) -> str:
    """Every row of the store's database as text (``pg_dump --data-only``)."""
    pg_dump = postgres_bin("pg_dump")
    assert pg_dump, "pg_dump is part of PostgreSQL's client package"
    address = backend_uri.removeprefix("postgresql+psycopg://")
    done = subprocess.run(
        [pg_dump, "--data-only", f"postgresql://{address}"],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


ADMIN = "admin"


class MlflowServer:
    """``mlflow server`` over a backend store, serving artifacts from ``artifacts``.

    With ``password``, MLflow's basic-auth app guards it: its admin is ``ADMIN`` with that
    password, its users in a sqlite file beside the artifacts, readable by every user.
    """

    def __init__(self, backend_uri: str, artifacts: Path, password: str | None = None) -> None:
        self.backend_uri = backend_uri
        self.artifacts = artifacts
        self.password = password
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = artifacts.parent / "mlflow-server.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it (on the same port as before) and wait until it answers ``/health``."""
        command = [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            self.backend_uri,
            "--artifacts-destination",
            str(self.artifacts),
            "--serve-artifacts",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
        ]
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        if self.password is not None:
            command += ["--app-name", "basic-auth"]
            env.update(self._auth_env())
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        raise RuntimeError(f"mlflow server did not answer in 120 s: {self.log.read_text()[-3000:]}")

    def _auth_env(self) -> dict[str, str]:
        """The basic-auth app's settings: its ini file, admin password and CSRF key."""
        ini = self.artifacts.parent / "basic_auth.ini"
        users = self.artifacts.parent / "users.db"
        ini.write_text(
            "[mlflow]\ndefault_permission = READ\n"
            f"database_uri = sqlite:///{users}\nadmin_username = {ADMIN}\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
            # a verified password is kept a minute: else each request spends ~0.5 s of CPU
            # in PBKDF2, and a 4-cell sweep takes 10x as long (docs: across-machines.md)
            "auth_cache_ttl_seconds = 60\n",
            encoding="utf-8",
        )
        assert self.password is not None
        return {
            "MLFLOW_AUTH_CONFIG_PATH": str(ini),
            "MLFLOW_AUTH_ADMIN_PASSWORD": self.password,
            "MLFLOW_FLASK_SERVER_SECRET_KEY": "runner-tests-csrf-key",
        }

    def stop(self) -> None:
        """Stop it as a service manager would (SIGTERM), and wait."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def mlflow_server(
    backend_uri: str, folder: Path, password: str | None = None
) -> Iterator[MlflowServer]:
    """A started ``MlflowServer`` whose artifacts are in ``folder``; stopped at the end."""
    server = MlflowServer(backend_uri, folder / "artifacts", password)
    server.artifacts.mkdir(parents=True, exist_ok=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()
