"""``python -m runner ARGS`` without a new interpreter: a fork of this test process runs the
command's own code, with its output and exit status, and none of a child's ~4 s of imports.

Use it where the process boundary is not the point of the test (a bad input's one line, a
refused key). Tests of what only a fresh interpreter shows (what a command imports, a signal,
a crash, a warning printed at import) keep ``subprocess``: ``tests/helpers/cli.py``.

Why a fork and not a call in this process: the command changes the process it runs in (Hydra
configures logging, handlers, its global config; the run sets signal handlers, environment
variables, MLflow's active run), and a call here once closed the output capture of every
later test of its worker. A fork shares what this process has imported and keeps nothing the
command did. Its coverage is saved before it exits (``[tool.coverage.run] patch`` holds
``fork``, so it writes a data file of its own).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

TIMEOUT_S = 300.0


def run_in_process(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    without_api_keys: bool = True,
    entry: Callable[[], object] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGS`` run in ``cwd``, as ``subprocess.run(capture_output=True)``
    would report it: ``returncode`` (0, or the ``SystemExit`` code), ``stdout``, ``stderr``.

    ``without_api_keys`` drops every ``*_API_KEY`` variable, as a new user's shell has none;
    ``env`` is added on top. ``entry`` is the command's function (default: ``runner``'s ``cli``).
    """
    if entry is None:
        from runner.__main__ import cli

        entry = cli
    argv = ["runner", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(entry, argv, cwd, env, without_api_keys, out.fileno(), err.fileno())
        code = _wait(pid, timeout_s)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["python", "-m", "runner", *args],
            code,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )


def _child(
    entry: Callable[[], object],
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None,
    without_api_keys: bool,
    out_fd: int,
    err_fd: int,
) -> None:
    """Run the command in the forked child and leave with its exit status (``os._exit``)."""
    code = 1
    try:
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        if without_api_keys:
            for key in [k for k in os.environ if k.endswith("_API_KEY")]:
                del os.environ[key]
        os.environ.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})})
        os.chdir(cwd)
        sys.argv = argv
        try:
            entry()
            code = 0
        except SystemExit as stop:
            code = _exit_status(stop.code)
    except BaseException:  # noqa: BLE001 - an uncaught error, as an interpreter reports it
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            _save_coverage()
        finally:
            os._exit(code)


def _exit_status(code: object) -> int:
    """``sys.exit``'s code as the shell sees it: None is 0, a message is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _save_coverage() -> None:
    """coverage.py saves at interpreter exit, which ``os._exit`` skips: save the fork's now."""
    try:
        import coverage
    except ImportError:
        return
    current = coverage.Coverage.current()
    if current is not None:
        current.stop()
        current.save()


def _wait(pid: int, timeout_s: float) -> int:
    """The child's exit status; killed and a failure after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"python -m runner (forked) did not end in {timeout_s:g} s")
        time.sleep(0.01)
