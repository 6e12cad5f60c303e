"""Every Label Studio task kind: the core's ``preference``, and each metric's ``HUMAN_TASKS``.

The core names no metric's kind: ``python -m runner.annotate export KIND`` and ``import`` find
the kind here, among the built-in and installed metrics' declarations
(``runner.api.HumanTask``). A kind declared twice (two metrics, or a metric and the core) is
one line naming both; a metric that cannot be imported is left out, and named when the kind
asked for is not found (it may be the one that declares it).
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.api.human_format import HumanDataError
from runner.api.human_task import HumanTask
from runner.human.preference_task import PREFERENCE
from runner.plugins.errors import PluginError
from runner.plugins.registry import available, find, load

CORE = ""
"""The ``metric`` of the core's own kinds."""


@dataclass(frozen=True)
class Declared:
    """A task kind and the metric that declares it."""

    task: HumanTask
    metric: str
    """The metric's name as the registry finds it (``CORE`` for the core's kinds)."""
    built_in: bool

    @property
    def owner(self) -> str:
        """What a judgment of this kind names as its metric: '' for a built-in (or the core)."""
        return "" if self.built_in else self.metric

    @property
    def origin(self) -> str:
        """``metrics=NAME`` or ``the core``, for help and errors."""
        return f"metrics={self.metric}" if self.metric else "the core"


def declared(metric: str = "") -> tuple[dict[str, Declared], tuple[str, ...]]:
    """Each kind's declaration by name, and one line per metric that could not be imported.

    ``metric`` names one more metric to look in (a loose module or an import path, as
    ``metrics=NAME`` finds it): installed ones are always looked in. Not cached: the folder
    a loose module is found in is the current one.
    """
    kinds = {PREFERENCE.kind: Declared(PREFERENCE, CORE, True)}
    broken = []
    plugins = sorted(available("metrics").items())
    if metric and metric not in dict(plugins):
        try:
            plugins.append((metric, find("metrics", metric)))
        except PluginError as err:
            raise HumanDataError(f"--metric {err}") from None
    for name, plugin in plugins:
        try:
            module = load(plugin)
        except PluginError as err:
            if name == metric:
                raise HumanDataError(f"--metric {metric}: {err}") from None
            broken.append(f"metrics={name} could not be imported ({err})")
            continue
        for task in getattr(module, "HUMAN_TASKS", ()) or ():
            if not isinstance(task, HumanTask):
                continue  # the plugin's contract check refuses it where it is loaded for a run
            if task.kind in kinds:
                other = kinds[task.kind].origin
                raise HumanDataError(
                    f"task kind {task.kind!r} is declared by {other} and by metrics={name}; "
                    "rename one of them (HumanTask.kind)"
                )
            kinds[task.kind] = Declared(task, name, plugin.built_in)
    return kinds, tuple(broken)


def kinds(metric: str = "") -> tuple[str, ...]:
    """Every task kind's name, the core's first."""
    return tuple(declared(metric)[0])


def task_kind(kind: str, metric: str = "") -> Declared:
    """The declaration of ``kind``; one line naming the kinds there are when it is none."""
    found, broken = declared(metric)
    if kind in found:
        return found[kind]
    also = f" ({'; '.join(broken)})" if broken else ""
    raise HumanDataError(
        f"no task kind {kind!r}: the kinds are {', '.join(found)}{also}; a metric declares "
        "its own in HUMAN_TASKS (a metric in a module file or not installed: --metric NAME)"
    )
