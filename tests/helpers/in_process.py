"""``python -m runner ARGS`` called in this test process: the command's own code, its output
and exit status, without a child interpreter's ~4 s of imports.

Use it where the process boundary is not the point of the test (a bad input's one line, a
refused key). Tests of what only a fresh process shows (what a command imports, a signal, a
crash, a warning printed at import) keep ``subprocess``: ``tests/helpers/cli.py``.

The call puts back what the command changes in the process: the working folder, the
environment, ``sys.argv``, the signal handlers it installs, Hydra's global config and the
logging Hydra configures for a job.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path


def run_in_process(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    without_api_keys: bool = True,
    entry: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGS`` run in ``cwd``, as ``subprocess.run(capture_output=True)``
    would report it: ``returncode`` (0, or the ``SystemExit`` code), ``stdout``, ``stderr``.

    ``without_api_keys`` drops every ``*_API_KEY`` variable, as a new user's shell has none;
    ``env`` is added on top. ``entry`` is the command's function (default: ``runner``'s ``cli``).
    """
    if entry is None:
        from runner.__main__ import cli

        entry = cli
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (
        _restored(cwd, env, without_api_keys, ["runner", *args]),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            entry()
        except SystemExit as stop:
            code = _exit_status(stop.code, err)
    return subprocess.CompletedProcess(
        ["python", "-m", "runner", *args], code, out.getvalue(), err.getvalue()
    )


def _exit_status(code: object, err: io.StringIO) -> int:
    """``sys.exit``'s code as the shell sees it: None is 0, a message is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


@contextlib.contextmanager
def _restored(
    cwd: Path, env: dict[str, str] | None, without_api_keys: bool, argv: list[str]
) -> Iterator[None]:
    """Run the block in ``cwd`` with ``env`` and ``argv``; afterwards, put back everything the
    command may have changed in this process."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    import runner.__main__ as entry_module

    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    saved_argv = sys.argv[:]
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    root = logging.getLogger()
    saved_logging = (root.level, root.handlers[:], logging.root.manager.disable)
    if without_api_keys:
        for key in [k for k in os.environ if k.endswith("_API_KEY")]:
            del os.environ[key]
    os.environ.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})})
    os.chdir(cwd)
    sys.argv = argv
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        for number, handler in saved_signals.items():
            signal.signal(number, handler)
        entry_module._stopping = False
        GlobalHydra.instance().clear()
        HydraConfig.instance().cfg = None  # type: ignore[assignment]
        for handler in root.handlers[:]:
            if handler not in saved_logging[1]:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(saved_logging[0])
        for handler in saved_logging[1]:
            if handler not in root.handlers:
                root.addHandler(handler)
        logging.disable(saved_logging[2])
