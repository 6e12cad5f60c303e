"""Stopping a sweep: Ctrl-C or SIGTERM ends it KILLED in seconds, every job with it.

A stop reaches a sweep three ways: ``kill -INT <pid>`` and ``kill -TERM <pid>`` reach the
sweeping process alone; Ctrl-C in a terminal sends SIGINT to its whole process group, the
joblib launcher's workers included. Whichever launcher runs the jobs (basic: in the sweeping
process; joblib: loky worker processes; Ray: tasks in Ray's workers), the sweeping process
alone answers, in ``stop_sweep``:

1. SIGTERM to the processes running the sweep's jobs: its own descendants (loky's workers, a
   Ray started in this process) and the owners of the sweep's RUNNING runs on this machine (a
   ``ray start`` head's workers). Each job ends its own run KILLED and exits without a line of
   its own (``runner/__main__.py``); a second signal does not cut that short;
2. SIGKILL to those still there after ``GRACE_S``;
3. the child runs still RUNNING and the parent run end KILLED (not FAILED: nothing failed);
4. one line, and exit status 130 (SIGINT) or 143 (SIGTERM) at once, without waiting for calls
   in flight. The same command resumes the sweep: FINISHED cells are skipped, KILLED ones run.

A job on another machine (a Ray cluster's) is not this process's to signal: Ray ends it when
the sweep's driver exits, and its run is marked KILLED here. Processes that ignore SIGTERM
(loky's resource tracker) end on their own once the sweeping process has exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any, NoReturn

from runner.api.errors import Terminated
from runner.sweep.parent import SweepParent
from runner.sweep.processes import descendants, end, ignores

SWEEPER_PID_ENV = "RUNNER_SWEEPER_PID"
"""The sweeping process's id, for its jobs: a job elsewhere leaves the stop to it."""
GRACE_S = 3.0
"""Seconds a job has to end its own run KILLED before it is killed outright."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
QUIET_TRACKERS = "ignore:resource_tracker:UserWarning"
"""A warnings filter (``PYTHONWARNINGS``) for 'resource_tracker: There appear to be N leaked'."""

_parent: SweepParent | None = None
"""The sweep this process runs, while ``stoppable``."""
_stopping = False


def in_sweeping_process() -> bool:
    """True in the process that runs the sweep (a basic launcher's job runs there too)."""
    return os.environ.get(SWEEPER_PID_ENV) == str(os.getpid())


@contextlib.contextmanager
def stoppable(parent: SweepParent) -> Iterator[None]:
    """Within: SIGINT and SIGTERM stop the whole sweep (``stop_sweep``)."""
    global _parent
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    warnings = os.environ.get("PYTHONWARNINGS")
    _parent = parent
    os.environ[SWEEPER_PID_ENV] = str(os.getpid())
    # The resource trackers that joblib's workers start (loky's, multiprocessing's) outlive a
    # stopped sweep, remove its semaphores and shared memory, and would warn about each: the
    # stop's line is the one line the user gets.
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [warnings, QUIET_TRACKERS]))
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_signal)
    # A launcher may have left them blocked in this thread (multiprocessing does while it
    # starts a helper process): a blocked signal would wait for the sweep's end.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(STOP_SIGNALS))
    try:
        yield
    except KeyboardInterrupt:  # a basic launcher's job left its handlers in this process
        stop_sweep(signal.SIGINT)
    except Terminated:
        stop_sweep(signal.SIGTERM)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        os.environ.pop(SWEEPER_PID_ENV, None)
        if warnings is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = warnings
        _parent = None


def rearm() -> None:
    """The sweep's handlers again, after a job that ran in this process installed its own.

    The basic launcher runs each job here; between jobs a stop is the sweep's to handle.
    """
    if _parent is not None and in_sweeping_process():
        for signum in STOP_SIGNALS:
            signal.signal(signum, _on_signal)


def _on_signal(signum: int, frame: Any) -> None:
    if not _stopping:  # a second Ctrl-C does not cut the first one's work short
        stop_sweep(signum)


def stop_sweep(signum: int) -> NoReturn:
    """End the jobs, mark the runs KILLED, say so in one line, exit 128 + ``signum``."""
    global _stopping
    _stopping = True
    _quiet_background_threads()
    name = signal.Signals(signum).name
    parent = _parent if _parent is not None and _parent.opened else None
    me = os.getpid()
    owners = _running_owners(parent) if parent else []
    targets = [
        pid
        for pid in dict.fromkeys([*descendants(me), *owners])
        if pid != me and not ignores(pid, signal.SIGTERM)
    ]
    end(targets, GRACE_S)
    if parent is None:
        line = f"stopped by {name} before any job started; nothing was recorded"
    else:
        _mark_killed(parent, f"stopped by {name} with its sweep")
        line = (
            f"stopped by {name}: the sweep's running jobs and its parent run {parent.run_id} are "
            "marked KILLED; the same command resumes it (FINISHED cells are skipped)"
        )
    print(line, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + signum)


def _quiet_background_threads() -> None:
    """No tracebacks or warnings from this process's other threads while it stops.

    Loky's manager thread notices the stopped workers and kills their trees itself, with
    ``pgrep`` children that the stop's SIGTERM reaches too: its thread then dies printing two
    tracebacks and a warning, after which the process exits anyway. The stop's line is the one
    line the user gets.
    """
    threading.excepthook = lambda args: None
    warnings.simplefilter("ignore")


def _running(parent: SweepParent) -> tuple[Any, list[Any]]:
    """(a tracker on the parent, its RUNNING child runs)."""
    from runner.tracking.reader import run_filter
    from runner.tracking.writer import Tracker

    tracker = Tracker.for_run(parent.uri, parent.run_id)
    found = tracker.client.search_runs(
        [tracker.experiment_id],
        run_filter(sweep=parent.run_id, status="RUNNING"),
        max_results=10000,
    )
    return tracker, list(found)


def _running_owners(parent: SweepParent) -> list[int]:
    """The live processes of this machine that own a RUNNING run of the sweep."""
    from runner.tracking.owners import HOST_TAG, PID_TAG, owner_alive

    _, running = _running(parent)
    host = socket.gethostname()
    return [
        int(tags[PID_TAG])
        for tags in (r.data.tags for r in running)
        if tags.get(HOST_TAG) == host and tags.get(PID_TAG, "").isdigit() and owner_alive(tags)
    ]


def _mark_killed(parent: SweepParent, why: str) -> None:
    """The children still RUNNING (their job could not end them), then the parent: KILLED."""
    from runner.tracking.writer import Tracker

    tracker, running = _running(parent)
    for run in running:
        Tracker.for_run(parent.uri, run.info.run_id).finish("KILLED", reason=why)
    tracker.finish("KILLED")
