"""A command started in a folder it cannot write: one line before Hydra creates ``outputs/``.

A run keeps Hydra's ``outputs/`` (``multirun/`` for ``-m``), its store ``mlruns/`` and its
response cache ``.cache/llm`` in the folder it starts from, and a report its ``reports/``.
From a read-only folder (a shared results folder, a read-only mount) Hydra's first
``mkdir`` ended the command with a 50-line traceback. ``refuse_unwritable`` looks at the
command line first and names the folder and the keys that move each of those elsewhere.
Stdlib only: it runs before anything else is imported.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

SQLITE = "sqlite:///"
HELP_FLAGS = ("-h", "--help", "--hydra-help", "-c", "--cfg", "-i", "--info", "-sc")
"""Flags with which Hydra prints and exits: nothing is written, nothing to check."""

RUN_FOLDERS = {
    "hydra.run.dir": "outputs",
    "tracking.uri": f"{SQLITE}mlruns/mlflow.db",
    "cache.dir": ".cache/llm",
}
"""``python -m runner``: each key that names a folder it writes, and its default (under cwd)."""
REPORT_FOLDERS = {"out": "reports"}
"""``python -m runner.report``: its output folder (it only reads the store)."""


def is_writable(folder: Path) -> bool:
    """Whether ``folder`` can be written, or made: its nearest existing ancestor is writable.

    ``os.access`` answers as the kernel would: a read-only mount refuses root too.
    """
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    return existing is not None and os.access(existing, os.W_OK | os.X_OK)


def target(value: str) -> Path | None:
    """The folder a key's value names (None: not a local folder, e.g. an ``http://`` store).

    A Hydra interpolation (``outputs/${now:...}``) counts from its fixed part.
    """
    value = value.strip("'\"").split("${", 1)[0]
    if "://" in value:
        if not value.startswith(SQLITE):
            return None
        value = str(Path(value[len(SQLITE) :]).parent)
    return Path.cwd() / Path(value).expanduser()


def given(argv: list[str]) -> dict[str, str]:
    """The ``key=value`` overrides of a command line (``+key``/``++key`` as ``key``)."""
    pairs = (a.partition("=") for a in argv if "=" in a and not a.startswith("-"))
    return {key.lstrip("+"): value for key, _, value in pairs}


def problem(argv: list[str], folders: dict[str, str]) -> str | None:
    """The one line naming the unwritable folder and the keys to move, or None.

    A sweep (``-m``) writes under Hydra's sweep folder instead of its run folder.
    """
    if any(a.partition("=")[0] in HELP_FLAGS for a in argv):
        return None
    if "hydra.run.dir" in folders and ("-m" in argv or "--multirun" in argv):
        folders = {k: v for k, v in folders.items() if k != "hydra.run.dir"}
        folders["hydra.sweep.dir"] = "multirun"
    values = given(argv)
    blocked: dict[str, Path] = {}
    for key, default in folders.items():
        value = values.get(key, "")
        folder = target(default if value in ("", "null") else value)
        if folder is not None and not is_writable(folder):
            blocked[key] = folder
    if not blocked:
        return None
    where = _existing(next(iter(blocked.values())))
    keys = ", ".join(blocked)
    moves = " ".join(_suggestion(key, folders[key]) for key in blocked)
    return (
        f"cannot write in {where} (read-only), where this command keeps {keys}; "
        f"start it from a writable folder, or move them: {moves}"
    )


def refuse_unwritable(argv: list[str], folders: dict[str, str]) -> None:
    """Exit 2 with one line when the command would write in a folder it cannot write."""
    line = problem(argv, folders)
    if line is not None:
        print(f"error: {line}", file=sys.stderr)
        sys.exit(2)


def writable_base() -> Path:
    """A folder to suggest instead: ``~/runner-runs`` when home is writable, else the temp dir's."""
    home = Path.home()
    base = home if is_writable(home) else Path(tempfile.gettempdir())
    return base / "runner-runs"


def suggested_store() -> str:
    """A ``tracking.uri`` in a writable folder (never the read-only one the user is in)."""
    return f"{SQLITE}{writable_base() / 'mlruns' / 'mlflow.db'}"


def _suggestion(key: str, default: str) -> str:
    if key == "tracking.uri":
        return f"{key}={suggested_store()}"
    return f"{key}={writable_base() / Path(default).parts[0].lstrip('.')}"


def _existing(folder: Path) -> Path:
    return next(p for p in (folder, *folder.parents) if p.exists())
