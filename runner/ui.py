"""``python -m runner.ui``: the MLflow UI on this folder's store, offline, opening on the runs.

Plain ``mlflow ui`` reports usage telemetry and, through the litellm it imports, retries a
price-map download three times at start-up; on a machine without internet both are waits
and warnings. Importing ``runner`` sets the defaults that turn them off
(``runner/__init__.py``); this then starts ``mlflow ui`` with that environment, prints the
links once it answers, and stops it (its workers included) on Ctrl-C or SIGTERM.

    python -m runner.ui                       # the store of ./mlruns (what runs started here use)
    python -m runner.ui --port 5001           # any other ``mlflow ui`` option
    python -m runner.ui tracking.uri=sqlite:////abs/path/mlflow.db   # as a job names it
    python -m runner.ui --tracking-uri sqlite:////abs/path/mlflow.db # the same
    python -m runner.ui --backend-store-uri sqlite:////abs/path/mlflow.db  # mlflow's spelling

MLflow 3.17's UI opens an experiment on its GenAI overview (traces, an assistant, "Detect
Issues") unless the browser is in its "Model training" mode: the URL's
``workflowType=machine_learning``, else the mode last picked in that browser (local storage),
else GenAI. The experiment's ``mlflow.experimentKind`` tag does not decide it in this version.
So every link made here (``experiment_url``, ``run_url``, ``sweep_url``, and the ones
printed at start-up) carries that parameter, and names a runs-table view the runner keeps in
the store (``Tracker.show_columns``: the headline metrics as columns): the experiment's, one
run's (the table filtered to it) or one sweep's (its jobs). ``runner/tracking/runs_view.py``
says why a filter lives in a view and not in the URL.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from runner.tracking.runs_view import (
    VIEW_KEY,
    VIEW_TAG,
    run_view_key,
    sweep_all_view_key,
    sweep_view_key,
)
from runner.tracking.store import shown

RUNS_MODE = "workflowType=machine_learning"
"""The query that puts MLflow 3.17's UI in its "Model training" mode: runs first."""
DEFAULT_PORT = 5000
"""``mlflow ui``'s port unless ``--port`` says otherwise."""


def ui_base(tracking_uri: str, port: int = DEFAULT_PORT) -> str:
    """Where the UI of ``tracking_uri`` is.

    An ``mlflow server`` serves its own; a local store (sqlite, a folder) is served by
    ``python -m runner.ui`` on 127.0.0.1:``port``.
    """
    if tracking_uri.startswith(("http://", "https://")):
        return shown(tracking_uri).rstrip("/")  # never the user and password it may carry
    return f"http://127.0.0.1:{port}"


def experiment_url(
    tracking_uri: str, experiment_id: str, port: int = DEFAULT_PORT, view: bool = True
) -> str:
    """The experiment's runs table (not its GenAI overview).

    With ``view``, the runner's view of it, whose columns are the headline metrics (only for an
    experiment that has that view: MLflow shows an error for a view it cannot find).
    """
    return _runs_table(tracking_uri, experiment_id, VIEW_KEY if view else "", port)


def run_url(tracking_uri: str, experiment_id: str, run_id: str, port: int = DEFAULT_PORT) -> str:
    """The runs table showing that run alone, its headline values as columns: what a job prints.

    The run's own view (``runner/tracking/runs_view.py``), written when the job logged its
    values; the run's name in that row opens its page (artifacts, viewer.html, traces).
    """
    return _runs_table(tracking_uri, experiment_id, run_view_key(run_id), port)


def sweep_url(
    tracking_uri: str, experiment_id: str, parent_run_id: str, port: int = DEFAULT_PORT
) -> str:
    """The runs table of a sweep's FINISHED jobs, one row each, their headline values as columns.

    The sweep's own view, written by its parent run and its jobs; the parent itself is left
    out, so the jobs are rows, not folded under it.
    """
    return _runs_table(tracking_uri, experiment_id, sweep_view_key(parent_run_id), port)


def sweep_lines(
    tracking_uri: str, experiment_id: str, parent_run_id: str, port: int = DEFAULT_PORT
) -> list[str]:
    """What a sweep prints at its start and end: where its jobs and scores are in the UI."""
    url = sweep_url(tracking_uri, experiment_id, parent_run_id, port)
    every = _runs_table(tracking_uri, experiment_id, sweep_all_view_key(parent_run_id), port)
    heading = "sweep: its FINISHED jobs side by side, their scores as columns, in the MLflow UI:"
    return [
        heading,
        *(f"  {line}" for line in open_lines(tracking_uri, url)),
        f"  every job, KILLED and FAILED ones too: {every}",
    ]


def run_page_url(
    tracking_uri: str, experiment_id: str, run_id: str, port: int = DEFAULT_PORT
) -> str:
    """The run's page: its metrics, artifacts (viewer.html, usage.json), traces."""
    base = ui_base(tracking_uri, port)
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}?{RUNS_MODE}"


def _runs_table(tracking_uri: str, experiment_id: str, view_key: str, port: int) -> str:
    """The experiment's runs table in "Model training" mode, opened on view ``view_key``."""
    query = RUNS_MODE + (f"&viewStateShareKey={view_key}" if view_key else "")
    return f"{ui_base(tracking_uri, port)}/#/experiments/{experiment_id}/runs?{query}"


def open_lines(tracking_uri: str, url: str) -> list[str]:
    """How to look at ``url``: the command serving a local store, then the link.

    A store behind an ``mlflow server`` has its UI already: the link alone.
    """
    if tracking_uri.startswith(("http://", "https://")):
        return [f"open {url}"]
    store = shlex.quote(f"tracking.uri={tracking_uri}")
    return [f"python -m runner.ui {store}", f"then open {url}"]


def command(args: list[str]) -> list[str]:
    """The ``mlflow ui`` command line.

    This folder's store unless one is given, and one server worker unless ``--workers`` is
    given (``WORKERS``).
    """
    args = mlflow_args(args)
    given = any(a.startswith("--backend-store-uri") for a in args)
    store = [] if given else ["--backend-store-uri", default_store()]
    workers = [] if option(args, ("--workers", "-w")) is not None else ["--workers", WORKERS]
    return [sys.executable, "-m", "mlflow", "ui", *workers, *store, *args]


JOB_EXECUTION = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"
"""MLflow's switch for its server's job runner: a ``huey`` consumer per kind of GenAI job
(prompt optimization, online scorers, issue detection, trace roll-ups), eight processes on
start-up. The runner's runs, traces and assessments need none of them, so ``runner.ui`` turns
it off unless the variable is set: the UI answered after 5.2-6.0 s instead of 8.8-10.0 s and
its processes had used 4 s of CPU instead of 12-14 s (2 cores, three starts each). Set
``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=true`` for those GenAI features."""


def server_env(environ: dict[str, str]) -> dict[str, str]:
    """The environment ``mlflow ui`` runs in: ``environ``, MLflow's job runner off unless set."""
    return {JOB_EXECUTION: "false", **environ}


WORKERS = "1"
"""Server processes for one researcher's browser. MLflow's default is 4, each importing its
server (seconds of CPU): on 2 cores the UI answered after 11.6 s with 4 and 7.8 s with 1
(quiet machine). One worker still serves the page's requests at once (MLflow serves its
Flask views from a thread pool). A shared server: ``--workers N``, or ``mlflow server``."""


def mlflow_args(args: list[str]) -> list[str]:
    """``args`` with ``tracking.uri=URI`` and ``--tracking-uri URI`` as ``--backend-store-uri URI``.

    The other commands name the store so; ``mlflow ui`` does not. So the store of a job's
    ``tracking.uri=...`` is served by pasting that same word. Read as every command reads it
    (``runner.config.folders.store_given``); a store named twice, differently, in any of the
    three spellings is a ``SpellingError``, not the last one silently.
    """
    from runner.config.folders import SpellingError, store_given

    words, given = store_given(args)
    theirs = option(words, ("--backend-store-uri",))
    if given is None:
        return words
    if theirs is not None and theirs != given:
        raise SpellingError(
            f"tracking.uri is given twice, differently: tracking.uri={given} and "
            f"--backend-store-uri {theirs}; give it once, tracking.uri=URI"
        )
    return words if theirs is not None else ["--backend-store-uri", given, *words]


def default_store() -> str:
    """This folder's store (``runner.tracking.store``: stdlib only, cheap to import)."""
    from runner.tracking.store import default_tracking_uri

    return default_tracking_uri()


def option(args: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the command-line option ``names`` (``--port 5001`` or ``--port=5001``)."""
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in names:
            return value if eq else (args[i + 1] if i + 1 < len(args) else None)
    return None


def experiment_links(uri: str, port: int) -> list[str]:
    """One line per experiment with runs in a sqlite store: its name, runs and runs-table link.

    Read with sqlite directly, read-only (as ``runner/tracking/sqlite_peek.py`` does), not
    through MLflow, so the UI's start-up waits for nothing; another kind of store gets no lines.
    """
    path = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None
    if path is None or "?" in uri or not path.is_file():
        return []
    read_only = f"{path.resolve().as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(read_only, uri=True, timeout=5)) as db:
            rows = db.execute(
                "SELECT e.experiment_id, e.name, COUNT(r.run_uuid), EXISTS(SELECT 1 FROM"
                " experiment_tags t WHERE t.experiment_id = e.experiment_id AND t.key = ?)"
                " FROM experiments e JOIN runs r ON r.experiment_id = e.experiment_id"
                " AND r.lifecycle_stage = 'active' WHERE e.lifecycle_stage = 'active'"
                " GROUP BY e.experiment_id ORDER BY e.name",
                (VIEW_TAG,),
            ).fetchall()
    except Exception:  # noqa: BLE001 - an unreadable store: mlflow ui will say what is wrong
        return []
    return [
        f"  {name} ({n} run{'s' * (n != 1)}): "
        + experiment_url(uri, str(eid), port, view=bool(view))
        for eid, name, n, view in rows
    ]


def port_taken(host: str, port: int) -> bool:
    """Whether another process listens on ``host:port`` (the UI could not start there).

    Bound as MLflow's server binds (``SO_REUSEADDR``), so a port a closed server left in
    TIME_WAIT counts as free, as it is for the server.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            return err.errno == errno.EADDRINUSE
    return False


def problem(argv: list[str]) -> str | None:
    """Why ``mlflow ui`` should not start: no store to show, or its port is taken; else None.

    Both once printed links and exited 0: an empty store was created in a folder without
    one, or the links pointed at whatever server held the port.
    """
    if "--help" in argv:
        return None
    uri = option(argv, ("--backend-store-uri",)) or default_store()
    from runner.tracking.store import missing_store

    missing = missing_store(uri)
    if missing:
        return missing
    host = option(argv, ("--host", "-h")) or "127.0.0.1"
    port = int(option(argv, ("--port", "-p")) or DEFAULT_PORT)
    if port_taken(host, port):
        free = next((p for p in range(port + 1, port + 50) if not port_taken(host, p)), port + 1)
        return (
            f"port {port} on {host} is in use by another server; "
            f"choose another: python -m runner.ui --port {free}"
        )
    return None


def main() -> None:
    """Start ``mlflow ui``, print where each experiment's runs are once it answers, serve.

    The environment set by ``import runner`` carries over, MLflow's job runner off unless
    set (``server_env``). No store or a busy port: one line, exit status 2, no links. The
    server runs in a process group of its own (its uvicorn workers, and ``huey_consumer`` job
    runners when enabled, with it): Ctrl-C or SIGTERM to this process stops that whole
    group, so nothing is left serving or consuming after it.
    """
    from runner.config.folders import SpellingError

    try:
        argv = command(sys.argv[1:])
    except SpellingError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    found = problem(argv)
    if found:
        print(f"error: {found}", file=sys.stderr)
        sys.exit(2)
    uri = option(argv, ("--backend-store-uri",)) or default_store()
    port = int(option(argv, ("--port", "-p")) or DEFAULT_PORT)
    host = option(argv, ("--host", "-h")) or "127.0.0.1"
    links = experiment_links(uri, port)
    server = subprocess.Popen(argv, env=server_env(dict(os.environ)), process_group=0)
    stopped: list[int] = []

    def stop(signum: int, frame: object) -> None:
        stopped.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    if links and "--help" not in argv and answers(host, port, server):
        heading = "runner.ui: the UI is up; each experiment's runs:"
        print("\n".join([heading, *links]), file=sys.stderr, flush=True)
    code = server.wait()
    end_group(server.pid)
    if stopped:
        sys.exit(128 + stopped[0])
    sys.exit(code if code >= 0 else 128 - code)


STARTUP_S = 300.0
"""How long the server may take to answer before the links are printed anyway (never, in
practice: MLflow's UI answers within seconds to a minute on 2 cores)."""


def answers(host: str, port: int, server: subprocess.Popen[bytes]) -> bool:
    """Wait until the UI answers at ``host:port``; False when the server ended first.

    The links are printed only then: printed at start, the first click was "connection
    refused" for as long as the server took to start.
    """
    target = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    url = f"http://{'[' + target + ']' if ':' in target else target}:{port}/"
    deadline = time.monotonic() + STARTUP_S
    while server.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except OSError:  # refused (not listening yet), or an HTTP error: not up
            time.sleep(0.2)
    return server.poll() is None


def end_group(pgid: int, grace_s: float = 5.0) -> None:
    """SIGTERM whatever is left of the server's process group, SIGKILL after ``grace_s``."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


if __name__ == "__main__":
    main()
