"""The live processes of a session, for tests that check a stopped command left none behind."""

from __future__ import annotations

from pathlib import Path


def session_processes(sid: int) -> list[int]:
    """The live (not zombie or dead) processes of session ``sid``, from Linux's /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, _pgrp, session = stat.read_text().rsplit(")", 1)[1].split()[:4]
        except (OSError, IndexError, ValueError):
            continue
        if int(session) == sid and state not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found
