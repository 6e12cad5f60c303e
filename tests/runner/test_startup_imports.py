"""The report, the viewer and the UI start without the plugins or litellm.

``python -m runner.report --help``, ``python -m runner.view`` (no run id: its usage line) and
``python -m runner.ui --help`` are what a researcher types first; none of them needs a strategy,
a metric or a model call, so none may import ``strategies``, ``metrics`` (their registries
import every plugin) or litellm (~5 s). Each command runs in a fresh interpreter with
``-X importtime``, which lists every module the process imported on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = {"strategies", "metrics", "litellm"}
COMMANDS = {
    "report --help": (["runner.report", "--help"], 0),
    "view": (["runner.view"], 2),  # no run id: the usage line and exit status 2
    "ui --help": (["runner.ui", "--help"], 0),  # execs ``mlflow ui --help``
}


def imported_by(args: list[str], status: int, cwd: Path) -> set[str]:
    """Top-level packages ``python -X importtime -m <args>`` imported before it ended (or,
    for ``runner.ui``, before it replaced itself with ``mlflow ui``, which is not profiled).
    """
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONPROFILEIMPORTTIME", None)  # would profile the exec'd mlflow ui too
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == status, done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_imports_no_plugin_and_no_litellm(command: str, tmp_path: Path) -> None:
    args, status = COMMANDS[command]
    loaded = imported_by(args, status, tmp_path)
    assert "runner" in loaded  # the profile was read
    assert loaded & FORBIDDEN == set(), f"python -m {' '.join(args)} imported {loaded & FORBIDDEN}"


def test_the_ui_names_the_store_the_runner_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.config.run_config import default_tracking_uri
    from runner.ui import command, default_store

    monkeypatch.chdir(tmp_path)
    assert default_store() == default_tracking_uri()
    assert command(["--port", "5001"])[-4:] == [
        "--backend-store-uri",
        default_tracking_uri(),
        "--port",
        "5001",
    ]
