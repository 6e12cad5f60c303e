"""Where a run's sqlite store lives, and how several processes share it safely.

Several jobs may write one sqlite store at once (the joblib launcher): sqlite serializes
writers and answers "database is locked" when a writer waits too long, so every write is
retried with backoff (``retrying``). A new store is created under a file lock
(``store_lock``), because MLflow creates and migrates the schema on first access. For many
machines, point ``tracking.uri`` at one ``mlflow server`` instead, which is then the single
writer. Nothing here imports MLflow (``runner/tracking/writer.py`` is its door).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from runner.on_ray import running_ray

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


MOUNTS = Path("/proc/mounts")
"""The mount table read to tell a network filesystem (Linux; elsewhere the check is skipped)."""
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "ceph",
        "glusterfs",
        "lustre",
        "afs",
        "beegfs",
        "gpfs",
        "fuse.sshfs",
        "fuse.glusterfs",
        "fuse.s3fs",
        "fuse.gcsfuse",
    }
)
"""Filesystems whose locks SQLite cannot rely on when several processes write one store."""
SERVER_TIMEOUT_S = 5.0


def filesystem_of(path: Path, mounts: str) -> str | None:
    """The type of the filesystem ``path`` is on, from a mount table's text (``/proc/mounts``).

    The longest mount point that holds the path decides; None when the table names none.
    """
    target = str(path.resolve())
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def networked_store(uri: str, key: str = "tracking.uri") -> str | None:
    """The one line for a sqlite store on a network filesystem (NFS, SMB...), else None.

    SQLite's file locks are unreliable there, and MLflow's own issues report "database is
    locked" and schema races when several writers share such a store: the jobs of one sweep
    (or of several machines) write at once. A server is the single writer instead.
    """
    path = sqlite_path(uri.split("?", 1)[0])
    if path is None:
        return None
    try:
        mounts = MOUNTS.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # no mount table to read (not Linux): nothing to say
    kind = filesystem_of(path, mounts)
    if kind not in NETWORK_FILESYSTEMS:
        return None
    return (
        f"{key}={uri}: {path.parent} is on a network filesystem ({kind}), where SQLite's "
        "locks are unsafe for several writers; put the store on a local disk, or run an "
        f"MLflow server and give {key}=http://<host>:<port>"
    )


def shown(uri: str) -> str:
    """``uri`` without the user and password it may carry (they never reach a message)."""
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


DATABASES = ("postgresql", "postgres", "mysql", "mssql", "oracle")
"""SQLAlchemy database schemes (``postgresql+psycopg://``...) MLflow would write to directly."""


def database_store(uri: str) -> str | None:
    """The one line for a ``tracking.uri`` that is not a store this runner records into.

    A database URI: MLflow would write the runs' rows to it directly from every machine, but
    their artifacts (summaries, traces, viewer) to ``./mlruns`` on the machine of each job,
    which no one else sees; a shared study goes through ``mlflow server`` on that database.
    A URI without a scheme: MLflow reads it as a folder of its deprecated file store.
    """
    scheme = urlsplit(uri).scheme.split("+", 1)[0].lower()
    if scheme in DATABASES:
        return (
            f"tracking.uri={shown(uri)} is a database, not a tracking server: runs would go to "
            "it but their artifacts to ./mlruns on each machine; start mlflow server "
            f"--backend-store-uri {shown(uri)} --artifacts-destination <a shared folder> and "
            "give tracking.uri=http://<its host>:5000 (docs/guides/across-machines.md)"
        )
    if "://" not in uri and not uri.startswith(("sqlite:", "file:", "databricks")):
        return (
            f"tracking.uri={uri} has no scheme: give sqlite:///{uri.rstrip('/')}/mlflow.db for a "
            "local store, or http://<host>:<port> for an mlflow server"
        )
    return None


def unusable_server(uri: str, key: str = "tracking.uri") -> str | None:
    """The one line for an ``http(s)://`` tracking server this command cannot use, else None.

    Silence is one problem: MLflow itself retries an unanswered server for minutes and then
    prints a traceback. A server that answers but refuses this user (MLflow's basic-auth
    app) is the other: MLflow would fail with a traceback at the run's first write. Any
    other answer is left to MLflow.
    """
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return None
    url = shown(uri).rstrip("/") + "/health"  # a user and password in the URI are no host
    try:
        with urllib.request.urlopen(url, timeout=SERVER_TIMEOUT_S):
            pass
    except urllib.error.HTTPError:
        pass  # a server is there
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return (
            f"{key}={shown(uri)}: no MLflow server answers there ({reason}); start it "
            f"(mlflow server --host {parts.hostname or '127.0.0.1'} --port {port}) or fix {key}"
        )
    return _refused(uri, key)


CREDENTIALS = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN")
"""Where MLflow's client takes a tracking server's credentials from (never from a config)."""


def _refused(uri: str, key: str) -> str | None:
    """The line for a server that refuses this user the experiments, as MLflow would ask."""
    parts = urlsplit(uri)
    url = shown(uri).rstrip("/") + "/api/2.0/mlflow/experiments/search?max_results=1"
    request = urllib.request.Request(url, headers=_authorization(parts))
    try:
        with urllib.request.urlopen(request, timeout=SERVER_TIMEOUT_S):
            return None
    except urllib.error.HTTPError as err:
        code = err.code
    except (urllib.error.URLError, OSError, ValueError):
        return None  # it answered /health: anything else is MLflow's to report
    given = [name for name in CREDENTIALS if os.environ.get(name)]
    if parts.username and not given:
        given = [f"the user in {key}"]
    if code == 401:
        sent = f"refused {' and '.join(given)}" if given else "none was given"
        return (
            f"{key}={shown(uri)}: the server asks for a user (401) and {sent}; set "
            "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) "
            f"to one of its users{_on_ray_where()}"
        )
    if code == 403:
        user = os.environ.get("MLFLOW_TRACKING_USERNAME") or parts.username or "this user"
        return (
            f"{key}={shown(uri)}: the server does not let {user} read its experiments (403); "
            "ask its admin for READ permission (EDIT to run jobs)"
        )
    return None


def _on_ray_where() -> str:
    """Where a Ray job's credentials come from, when this is one: not the sweep's shell."""
    if running_ray() is None:
        return ""
    return (
        " (on a Ray cluster, exported before each machine's `ray start`: its jobs have that "
        "environment, not the sweep's)"
    )


def _authorization(parts: SplitResult) -> dict[str, str]:
    """The header MLflow's client sends: a token, else a user and password (env or URI)."""
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    if token:
        return {"Authorization": f"Bearer {token}"}
    user = os.environ.get("MLFLOW_TRACKING_USERNAME") or unquote(parts.username or "")
    password = os.environ.get("MLFLOW_TRACKING_PASSWORD") or unquote(parts.password or "")
    if not user and not password:
        return {}
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


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
