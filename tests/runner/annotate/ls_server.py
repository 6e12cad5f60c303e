"""A real Label Studio on 127.0.0.1 for the round-trip test, and a tiny client of its REST API.

Label Studio lives in its own virtual environment (its pins conflict with ours): the binary
is ``$LABEL_STUDIO_BIN`` or ``${TMPDIR:-/tmp}/label-studio-venv/bin/label-studio``, as
``.ci/run`` installs it. A fresh data dir needs about a minute of database migrations on two
cores, so ``.ci/run`` migrates one empty data dir once (``template-data`` inside the venv);
each test server starts from a copy of it (about 8 s), or migrates its own when it is absent.
The user and its API token are made at start from the command line (``--username``,
``--password``, ``--user-token``; legacy tokens enabled so ``Authorization: Token`` works).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.ports import free_port

TOKEN = "roundtrip-test-token-0123456789"
USER = "annotator@example.invalid"
OFFLINE = {
    "LATEST_VERSION_CHECK": "false",  # else it asks pypi.org for its newest release at start
    "SENTRY_DSN": "",  # else its errors go to Sentry (an empty value turns it off)
    "FRONTEND_SENTRY_DSN": "",
    "COLLECT_ANALYTICS": "false",
}
"""Label Studio's settings for a server that reaches nothing but this machine."""
READY_TIMEOUT_S = 240.0  # a data dir without the template migrates first (~90 s when busy)


def binary() -> Path:
    """Where the Label Studio executable should be (it may be absent)."""
    given = os.environ.get("LABEL_STUDIO_BIN")
    if given:
        return Path(given)
    return Path(os.environ.get("TMPDIR", "/tmp")) / "label-studio-venv" / "bin" / "label-studio"


def template(bin_path: Path) -> Path:
    """The migrated empty data dir beside the executable's venv (``.ci/run`` makes it)."""
    return bin_path.resolve().parent.parent / "template-data"


@dataclass
class Server:
    """A running Label Studio and what the client needs to talk to it."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One JSON request with the user's token; the decoded answer."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Token {TOKEN}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")[:800]
            raise AssertionError(f"{method} {path}: HTTP {err.code}: {detail}") from None
        return json.loads(raw) if raw else None

    def stop(self) -> None:
        """Terminate the server (and kill it if it does not stop in 10 s)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start(bin_path: Path, root: Path) -> Server:
    """Label Studio on a free loopback port with its own sqlite data dir under ``root``."""
    data = root / "data"
    if template(bin_path).is_dir():
        shutil.copytree(template(bin_path), data)
    port = free_port()
    log = root / "label-studio.log"
    command = [
        str(bin_path), "start", "--no-browser", "--internal-host", "127.0.0.1",
        "--port", str(port), "--data-dir", str(data), "--username", USER,
        "--password", "roundtrip-password", "--user-token", TOKEN, "--enable-legacy-api-token",
    ]  # fmt: skip
    env = {**os.environ, **OFFLINE, "LABEL_STUDIO_BASE_DATA_DIR": str(data)}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    _wait(server)
    return server


def _wait(server: Server) -> None:
    """Until /health answers 200; a server that exits or never answers fails with its log."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.25)
    server.stop()
    tail = server.log.read_text(errors="replace")[-2000:]
    raise AssertionError(f"Label Studio did not answer on {server.url}; its log ends:\n{tail}")
