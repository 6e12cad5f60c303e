"""The error a plugin that cannot be used raises, and how its cause is shown in one line."""

from __future__ import annotations

from runner.errors import ConfigError


class PluginError(ConfigError):
    """A plugin that is unknown, clashes, fails to import or breaks its contract.

    A configuration problem: exit status 2, one line, no run.
    """


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (a plugin's traceback stays out of the way)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else "(no message)"
