"""The error a plugin that cannot be used raises, and how its cause is shown in one line."""

from __future__ import annotations

import difflib

from runner.api.errors import ConfigError


class PluginError(ConfigError):
    """A plugin that is unknown, clashes, fails to import or breaks its contract.

    A configuration problem: exit status 2, one line, no run.
    """


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (a plugin's traceback stays out of the way)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else "(no message)"


def nearest(name: str, offered: list[str]) -> str:
    """'did you mean hier? ' for the names near ``name`` (up to three); '' when none is near."""
    near = difflib.get_close_matches(name, offered, n=3, cutoff=0.6)
    return f"did you mean {' or '.join(near)}? " if near else ""
