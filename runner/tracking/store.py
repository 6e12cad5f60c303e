"""Where a run's sqlite store lives, and how several processes share it safely.

Several jobs may write one sqlite store at once (the joblib launcher): sqlite serializes
writers and answers "database is locked" when a writer waits too long, so every write is
retried with backoff (``retrying``). A new store is created under a file lock
(``store_lock``), because MLflow creates and migrates the schema on first access. For many
machines, point ``tracking.uri`` at one ``mlflow server`` instead, which is then the single
writer. Nothing here imports MLflow (``runner/tracking/writer.py`` is its door).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
_SQLITE = "sqlite:///"


def default_tracking_uri() -> str:
    """Sqlite store in ./mlruns of the current folder, where MLflow users look.

    MLflow 3.13+ refuses a plain file store; the artifacts go beside it, in ./mlruns/artifacts.
    The one place this default is written: the runner, the report, the viewer and the UI use it.
    """
    return f"{_SQLITE}{Path.cwd() / 'mlruns' / 'mlflow.db'}"


def artifact_root(uri: str) -> Path | None:
    """Artifacts beside a sqlite store, in <store folder>/artifacts/; None = MLflow's default."""
    if uri.startswith(_SQLITE):
        return Path(uri[len(_SQLITE) :]).parent / "artifacts"
    return None


def sqlite_path(uri: str) -> Path | None:
    """The store's file for a ``sqlite:///`` URI, else None (a server or another database)."""
    return Path(uri[len(_SQLITE) :]) if uri.startswith(_SQLITE) else None


def store_to_build(uri: str) -> Path | None:
    """The file of a plain ``sqlite:///`` store that does not exist yet, else None.

    An empty file counts as missing: it is what a bare ``sqlite3.connect`` leaves. A URI with
    query parameters, a server or another database is never built here.
    """
    path = sqlite_path(uri)
    if path is None or "?" in uri or (path.exists() and path.stat().st_size > 0):
        return None
    return path


def missing_store(uri: str, key: str = "tracking.uri") -> str | None:
    """The one line for a command that only reads, pointed at a sqlite store that is not there.

    Opening it through MLflow would create an empty store (``mlruns/mlflow.db``) in a folder
    that had none, and then answer that it holds no run: a read-only command (the viewer,
    the report, the UI) says where it looked instead. ``key`` is the option that moves it.
    """
    path = sqlite_path(uri.split("?", 1)[0])
    if path is None or path.is_file():
        return None
    return (
        f"no store at {path}: no run was logged here; start this from the folder you ran "
        f"python -m runner in, or give {key}=sqlite:///<that folder>/mlruns/mlflow.db"
    )


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Serialize a new sqlite store's creation across processes.

    MLflow creates and migrates the schema on first access, and two processes doing it at
    once corrupt it.
    """
    if not uri.startswith(_SQLITE):
        yield
        return
    lock = Path(uri[len(_SQLITE) :] + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def retrying(call: Callable[[], T], attempts: int = 8, also: tuple[str, ...] = ()) -> T:
    """``call()``, again after a short random wait while sqlite says the database is locked.

    Another transient error may be named by a fragment of its message in ``also``.
    """
    for attempt in range(attempts):
        try:
            return call()
        except Exception as err:  # MlflowException or sqlalchemy's OperationalError
            transient = any(m in str(err) for m in ("database is locked", *also))
            if not transient or attempt == attempts - 1:
                raise
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
    raise AssertionError("unreachable")


ARTIFACT_PROGRESS = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
"""MLflow's switch for its download progress bars, read from the environment at each download."""


@contextlib.contextmanager
def quiet_downloads() -> Iterator[None]:
    """No download progress bars while inside.

    MLflow draws a progress bar on stderr per download: a dozen lines at the end of every
    run, and noise under a command's own output (the viewer, ``runner.annotate``).
    """
    before = os.environ.get(ARTIFACT_PROGRESS)
    os.environ[ARTIFACT_PROGRESS] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ARTIFACT_PROGRESS, None)
        else:
            os.environ[ARTIFACT_PROGRESS] = before
