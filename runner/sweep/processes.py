"""The processes a sweep started, found and ended without psutil.

A stopped sweep signals the processes that run its jobs: its own descendants (the joblib
launcher's loky workers, a Ray started in the sweeping process) and the owners of its RUNNING
runs on this machine (a ``ray start`` head's workers). Linux lists processes in ``/proc``;
elsewhere ``ps`` does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

_PROC = Path("/proc")


def _parents() -> dict[int, int]:
    """Each live process id -> its parent's id (zombies left out: they are gone)."""
    if not _PROC.is_dir():
        return _parents_from_ps()
    found = {}
    for stat in _PROC.glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError, ValueError):
            continue  # ended while we looked
        if state not in ("Z", "X"):
            found[int(stat.parent.name)] = int(ppid)
    return found


def _parents_from_ps() -> dict[int, int]:
    try:
        out = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid=,stat="], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return {}
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and not parts[2].startswith("Z"):
            found[int(parts[0])] = int(parts[1])
    return found


def descendants(pid: int) -> list[int]:
    """The live processes below ``pid`` (children, their children...)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def ignores(pid: int, signum: int) -> bool:
    """True when ``pid`` ignores ``signum`` (Linux; elsewhere False).

    Loky's resource tracker ignores SIGINT and SIGTERM: it ends when the sweep's process does
    (its pipe closes) and then removes the shared memory the sweep left, so it is not killed.
    """
    try:
        status = (_PROC / str(pid) / "status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has ended: it only waits to be reaped)."""
    if _PROC.is_dir():
        try:
            state = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def send(pids: Iterable[int], signum: int) -> None:
    """``signum`` to each of ``pids`` that still runs."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def end(pids: list[int], grace_s: float) -> list[int]:
    """SIGTERM to ``pids``; SIGKILL to those still running after ``grace_s``.

    Returns the pids that needed SIGKILL.
    """
    send(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    send(left, signal.SIGKILL)
    return left
