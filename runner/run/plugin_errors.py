"""A strategy's or metric's code that breaks, as one line naming the plugin, file and line.

A plugin is a researcher's code run inside the job. Its bug (an exception) or a value its
contract forbids (a ``str`` where a ``StrategyResult`` belongs, a word where a number
belongs) would otherwise surface deep in the runner's own code with a long traceback that
never names the plugin. Each call here catches both and raises one line,
``<kind> '<name>' (<file>:<line>) <what broke>; <fix>``: for an exception, the innermost
frame of the plugin's own files; for a bad value, the definition of the function that
returned it (the checks of returned values are ``runner/run/plugin_calls.py``). The full
traceback stays the exception's cause (the lifecycle logs it as the
run's ``error.txt``; ``verbose=true`` prints it).

An error of the runner's own (a ``RunnerError`` from a role's gateway, a ``ConfigError`` a
metric's ``setup`` raises for a bad parameter) passes through unchanged: it already names
its fix. What a module must declare is checked when it is loaded
(``runner/plugins/contract.py``); these checks are on what its code does when called.
"""

from __future__ import annotations

import inspect
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from runner.api.errors import PluginContractBreach, PluginFailure, RunnerError
from runner.plugins.errors import first_line

T = TypeVar("T")

IN_THE_RUN = "the traceback is the run's error.txt artifact; verbose=true prints it"
"""Where the traceback of a failure inside the MLflow run is kept."""
BEFORE_THE_RUN = "verbose=true prints the traceback"
"""Where it is when no run exists yet (a metric's ``setup``)."""


@dataclass(frozen=True)
class PluginRef:
    """The plugin being called, as its failure names it."""

    kind: str
    """'strategy' or 'metric'."""
    name: str
    """The name (a metric: its label) the config gives."""
    files: tuple[str, ...]
    """Its source files: an exception is placed at its innermost frame in one of them."""

    def breach(self, function: Any, what: str, fix: str) -> PluginContractBreach:
        """The error for a value its contract forbids, placed at ``function``'s definition."""
        return PluginContractBreach(
            f"{self.kind} '{self.name}' ({defined_at(function)}) {what}; {fix}"
        )


def plugin(kind: str, name: str, *sources: object) -> PluginRef:
    """``kind`` '``name``', whose code is in the files of ``sources`` (modules, classes)."""
    files = [source_file(s) for s in sources]
    return PluginRef(kind, name, tuple(dict.fromkeys(f for f in files if f)))


def call(who: PluginRef, hint: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)``; an exception of the plugin's own is one line naming it."""
    try:
        return function(*args, **kwargs)
    except RunnerError:
        raise
    except Exception as err:
        where = raised_at(err, who.files, function)
        raise PluginFailure(
            f"{who.kind} '{who.name}' ({where}) raised {type(err).__name__}: {first_line(err)}; "
            f"fix the {who.kind}'s code ({hint})"
        ) from err


def raised_at(err: BaseException, files: tuple[str, ...], function: Any) -> str:
    """``file:line`` of the innermost frame in ``files``.

    Else the first frame past ``call`` (a function defined elsewhere), else the definition of
    ``function`` (the call itself failed, e.g. on its arguments).
    """
    frames = traceback.extract_tb(err.__traceback__)[1:]  # [0] is call's own frame
    ours = {_same(f) for f in files}
    inside = [f for f in frames if _same(f.filename) in ours]
    frame = inside[-1] if inside else frames[0] if frames else None
    return f"{frame.filename}:{frame.lineno}" if frame is not None else defined_at(function)


def defined_at(obj: Any) -> str:
    """``file:line`` where a function, method or class is defined (``?`` when unknown)."""
    try:
        target = inspect.unwrap(getattr(obj, "__func__", obj))
        _, line = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return source_file(obj) or "?"
    return f"{source_file(target)}:{line}"


def source_file(obj: Any) -> str:
    """The file ``obj`` (a module, class or function) is defined in; '' when it has none."""
    try:
        return inspect.getsourcefile(obj) or inspect.getfile(obj)
    except TypeError:
        return ""


def _same(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))
