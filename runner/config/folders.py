"""A command started in a folder it cannot write: one line before Hydra creates ``outputs/``.

A run keeps Hydra's ``outputs/`` (``multirun/`` for ``-m``), its store ``mlruns/`` and its
response cache ``.cache/llm`` in the folder it starts from, and a report its ``reports/``.
From a read-only folder (a shared results folder, a read-only mount) Hydra's first
``mkdir`` ended the command with a 50-line traceback. ``refuse_unwritable`` looks at the
command line first and names the folder and the keys that move each of those elsewhere.

The store has one spelling in every command, ``tracking.uri=URI``; ``--tracking-uri URI`` (and
``--tracking-uri=URI``), which ``python -m runner.annotate`` once took alone, means the same
everywhere (``store_override`` for the Hydra commands, ``store_given`` for the others).
Stdlib only: it runs before anything else is imported.
"""

from __future__ import annotations

import os
import re
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
    """The ``key=value`` overrides of a command line (``+key``/``++key`` as ``key``).

    A value in Hydra's quotes (``tracking.uri='sqlite:///my runs/mlflow.db'``) is the text inside.
    """
    pairs = (a.partition("=") for a in argv if "=" in a and not a.startswith("-"))
    return {key.lstrip("+"): unquoted(value) for key, _, value in pairs}


def unquoted(value: str) -> str:
    """``value`` without the one pair of quotes Hydra's override grammar wraps around it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].replace("\\" + value[0], value[0])
    return value


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


STORE_KEY = "tracking.uri"
STORE_FLAG = "--tracking-uri"
_PLAIN = re.compile(r"[A-Za-z0-9_/:.+@%*?|-]*")
"""Characters an unquoted Hydra override value may hold as they are (no ``,`` or spaces)."""


class SpellingError(ValueError):
    """A value given twice on one command line, differently, or a flag without its value."""


def store_given(
    argv: list[str], key: str = STORE_KEY, flag: str = STORE_FLAG, metavar: str = "URI"
) -> tuple[list[str], str | None]:
    """``argv`` without ``key=VALUE``, ``flag VALUE`` and ``flag=VALUE``, and the value they give.

    Every command names the store ``tracking.uri=URI``; ``--tracking-uri URI`` is accepted as
    the same. Both given with different values raise a ``SpellingError`` naming both: which
    one won used to depend on the command.
    """
    rest, values, spelled = _spellings(argv, key, flag, metavar)
    distinct = list(dict.fromkeys(values))
    if len(distinct) > 1:
        both = " and ".join(dict.fromkeys(spelled))
        raise SpellingError(
            f"{key} is given twice, differently: {both}; give it once, {key}={metavar}"
        )
    return [a for a in rest if a is not None], (distinct[0] if distinct else None)


def store_override(argv: list[str], key: str = STORE_KEY, flag: str = STORE_FLAG) -> list[str]:
    """``argv`` for Hydra: ``flag VALUE`` as the override ``key=VALUE``; exit 2 on a conflict.

    The override takes the place of the first spelling, the user's own words are kept as
    typed (``+key=``, quotes), and a flag's value is quoted when Hydra would read it as more
    than a string (a comma, a space).
    """
    try:
        store_given(argv, key, flag)
        rest, values, spelled = _spellings(argv, key, flag)
    except SpellingError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    if not values:
        return list(argv)
    word = next((w for w in spelled if not w.startswith("-")), None)
    at = rest.index(None)
    words = [a for a in rest if a is not None]
    words.insert(at, word if word is not None else f"{key}={hydra_quoted(values[0])}")
    return words


def hydra_quoted(value: str) -> str:
    """``value`` as a Hydra override reads it back as one string (quoted only when needed)."""
    if _PLAIN.fullmatch(value):
        return value
    return "'" + value.replace("'", "\\'") + "'"


def _spellings(
    argv: list[str], key: str, flag: str, metavar: str = "URI"
) -> tuple[list[str | None], list[str], list[str]]:
    """The words left (None where a spelling stood), the values given, and each as typed."""
    rest: list[str | None] = []
    values: list[str] = []
    spelled: list[str] = []
    words = iter(argv)
    for word in words:
        if word == flag:
            value = next(words, None)
            if value is None:
                raise SpellingError(f"{flag} needs a value: {key}={metavar} (or {flag} {metavar})")
            values.append(value)
            spelled.append(f"{flag} {value}")
        elif word.startswith(f"{flag}="):
            values.append(word.partition("=")[2])
            spelled.append(word)
        elif not word.startswith("-") and word.partition("=")[0].lstrip("+") == key and "=" in word:
            values.append(unquoted(word.partition("=")[2]))
            spelled.append(word)
        else:
            rest.append(word)
            continue
        if len(values) == 1:
            rest.append(None)
    return rest, values, spelled
