"""Who owns a run, and whether that process is gone.

A process killed outright (SIGKILL, OOM, power) cannot end its run, so every run records its
owner (``PID_TAG``, ``HOST_TAG``, ``PID_START_TAG``) and the next run of the same cell marks
runs whose owner is gone KILLED (``Tracker.close_stale`` in ``runner/tracking/writer.py``).

Another machine's process cannot be looked at, except on a Ray cluster: a job that runs on a
Ray worker also records its node (``RAY_NODE_TAG``), and a job of the same cluster knows the
run's owner is gone when Ray says that node is dead (a machine lost to the cluster, whose
task Ray then runs again elsewhere).
"""

from __future__ import annotations

import getpass
import os
import socket
from pathlib import Path
from urllib.parse import unquote, urlsplit

from runner.on_ray import running_ray

PID_TAG, HOST_TAG, PID_START_TAG = "runner.pid", "runner.host", "runner.pid_start"
"""Who owns a run: its process id, host name, and the process's start (to tell a reused pid)."""
RAY_NODE_TAG = "runner.ray_node"
"""The Ray node a job ran on (jobs of a Ray launcher only)."""
USER_TAG = "mlflow.user"
"""MLflow's own tag for who ran a run (its runs table's User column, ``run.info.user_id``)."""
STALE_TAG = "runner.stale"
"""Set on a run marked KILLED because its process had died without ending it."""


def owner_tags(uri: str = "") -> dict[str, str]:
    """Tags naming this process as a run's owner, so a later run can tell it died.

    Its user is the one ``uri`` signs in as, when it carries one (``user``).
    """
    pid = os.getpid()
    tags = {
        PID_TAG: str(pid),
        HOST_TAG: socket.gethostname(),
        PID_START_TAG: _process_start(pid) or "",
        USER_TAG: user(uri),
    }
    ray = running_ray()
    if ray is not None:
        tags[RAY_NODE_TAG] = str(ray.get_runtime_context().get_node_id())
    return tags


def user(uri: str = "") -> str:
    """Who runs this process, as a shared server's runs table should show it.

    The tracking server's user: the one ``uri`` signs in as (``http://bob:...@host``), else
    ``MLFLOW_TRACKING_USERNAME``; else the login name. MLflow's client records "unknown"
    unless told.
    """
    signed_in = urlsplit(uri).username
    if signed_in:
        return unquote(signed_in)
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        login = "unknown"
    return os.environ.get("MLFLOW_TRACKING_USERNAME") or login


def _ray_node_dead(node: str) -> bool:
    """Whether Ray knows node ``node`` of this process's cluster and says it is dead."""
    ray = running_ray()
    if ray is None or not node:
        return False
    try:
        nodes = ray.nodes()
    except Exception:  # noqa: BLE001 - a cluster that cannot answer proves nothing
        return False
    return any(n.get("NodeID") == node and not n.get("Alive", True) for n in nodes)


def _process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), else None.

    A pid is reused once its process is gone; the start time tells the two apart.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]  # a zombie is dead, just not reaped


def owner_alive(tags: dict[str, str]) -> bool:
    """False only when the run's owner is provably gone; unknown owners count as alive.

    Gone means: a process of this host whose pid is unused, a zombie, or reused by a later
    process; or a process on a Ray node that this process's cluster says is dead.
    """
    if tags.get(HOST_TAG) != socket.gethostname() or not tags.get(PID_TAG, "").isdigit():
        # another machine's run, or one from before owners were recorded: alive unless the
        # Ray cluster this process runs on says its node is dead
        return not _ray_node_dead(tags.get(RAY_NODE_TAG, ""))
    pid = int(tags[PID_TAG])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    started = _process_start(pid)
    if Path("/proc").is_dir() and started is None:
        return False  # a zombie (or it has just exited)
    return not (tags.get(PID_START_TAG) and started and started != tags[PID_START_TAG])
