"""Every result of a Label Studio export checked against its task kind's declared controls.

Each task kind (``runner.api.HumanTask``) declares its labeling config's controls by name; an
export's results carry a control's name as ``from_name`` and its answer under value keys
(``choices`` for Choices, ``labels`` with ``start``/``end``/``text`` for Labels, ``text`` for
a TextArea, with ``start``/``end`` when it is per region). A control renamed in a project's
config, or a value key spelt otherwise, used to be skipped in silence (a span read with no
error types); here every result is checked, for every kind, the core's or a metric's.
``tests/runner/human`` holds the declared names equal to the XML the configs write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runner.api.human_task import Control, HumanTask, item_control
from runner.human.judgments import HumanDataError

Raise = Callable[[str, str, str], HumanDataError]
"""A task's error: (field, problem, fix) -> the one-line ``HumanDataError``."""


def declared_name(name: object, controls: Mapping[str, Control]) -> str | None:
    """The name ``controls`` declares ``name`` under, or None when it has no such control.

    A repeated control's ``label_3`` is declared as ``label_{{idx}}``.
    """
    if not isinstance(name, str):
        return None
    if name in controls:
        return name
    repeated = item_control(name, controls)
    return repeated[0] if repeated else None


def check_results(task: HumanTask, results: list[dict[str, Any]], error: Raise) -> None:
    """Every result of one annotation names a control of ``task`` with its value keys.

    Relations (two linked regions) carry no control.
    """
    fix = f"use runner.annotate's labeling-{task.kind}.xml as the project's labeling config"
    for item in results:
        if item.get("type") == "relation":
            continue
        name = item.get("from_name")
        declared = declared_name(name, task.controls)
        if declared is None:
            expected = ", ".join(c.describe(n) for n, c in task.controls.items())
            problem = f"unknown control {name!r}; the {task.kind} labeling config has {expected}"
            raise error("from_name", problem, fix)
        control = task.controls[declared]
        _check_value(task.kind, str(name), control, item.get("value"), error, fix)


def _check_value(
    kind: str, name: str, control: Control, value: Any, error: Raise, fix: str
) -> None:
    """The value of one result has the keys ``control`` writes, and no other."""
    keys = set(value) if isinstance(value, dict) else set()
    expects = f"the {kind} labeling config's {control.describe(name)}"
    unknown = sorted(keys - {*control.needs, *control.may})
    if unknown:
        raise error(f"value.{unknown[0]}", f"unknown key of control {name!r}; {expects}", fix)
    missing = [key for key in control.needs if key not in keys]
    if missing:
        raise error(f"value.{missing[0]}", f"missing in control {name!r}; {expects}", fix)
