"""The controls of our labeling configs, as the Label Studio reader checks them.

Each task kind's labeling config (``runner.annotate.configs``) names its controls; an
export's results carry a control's name as ``from_name`` and its answer under value keys
(``choices`` for Choices, ``labels`` with ``start``/``end``/``text`` for Labels, ``text`` for
a TextArea, with ``start``/``end`` when it is per region). A control renamed in a project's
config, or a value key spelt otherwise, used to be skipped in silence (a coherence span read
with no error types); here every result is checked against its kind's controls, and a
region of a span annotation must carry its error types. ``tests/runner/human`` holds these names
equal to the XML the configs write.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.human.judgments import CRITERIA, HumanDataError


@dataclass(frozen=True)
class Control:
    """What one control of a labeling config writes in a result's ``value``."""

    tag: str
    """The config's XML element (``Choices``, ``Labels``, ``TextArea``)."""
    needs: tuple[str, ...]
    """Value keys every result of the control has."""
    may: tuple[str, ...] = ()
    """Further value keys Label Studio writes for it (a region's offsets and text)."""

    def describe(self, name: str) -> str:
        """The control as an error names what the config expects: ``name (Tag: value keys)``."""
        keys = "/".join((*self.needs, *self.may))
        return f"{name} ({self.tag}: value {keys})"


_CHOICE = Control("Choices", ("choices",))
_TEXT = Control("TextArea", ("text",))
_REGION_TEXT = Control("TextArea", ("text",), ("start", "end"))
_LABELS = Control("Labels", ("labels",), ("start", "end", "text"))
FLAGS = ("contradiction", "omission_summary_1", "omission_summary_2")
"""The pairwise Yes/No controls."""
LABEL_CONTROL = "error_type"
"""The span annotation's Labels control: a region's error types."""

FAITHFUL_CONTROL = "faithful"
"""The claims task's summary-level Yes/No: is all of the summary consistent with the source?"""
CLAIM_CHOICES: dict[str, str] = {
    "Supported": "supported",
    "Partially supported": "partial",
    "Not supported": "unsupported",
    "Cannot tell": "cannot_tell",
}
"""The claims task's choices per claim, as people see them -> ``CLAIM_LABELS``."""
PER_CLAIM = ("label", "evidence", "reason")
"""The claims task's controls repeated per claim, named ``<control>_<index>`` (from 0) by
Label Studio's ``Repeater``; the config and ``CONTROLS`` name them ``<control>_{{idx}}``."""
INDEX_FLAG = "{{idx}}"
"""What the ``Repeater`` replaces with a claim's index in its children's attributes."""
_PER_CLAIM = re.compile(rf"({'|'.join(PER_CLAIM)})_(\d+)")


def claim_control(name: str) -> tuple[str, int] | None:
    """(control, claim index) of a per-claim control's name (``label_3``), else None."""
    found = _PER_CLAIM.fullmatch(name)
    return (found.group(1), int(found.group(2))) if found else None


CONTROLS: dict[str, dict[str, Control]] = {
    "preference": {
        **{name: _CHOICE for name in (*CRITERIA, *FLAGS)},
        **{f"{name}_comments": _TEXT for name in (*CRITERIA, *FLAGS)},
    },
    "coherence": {LABEL_CONTROL: _LABELS, "questions": _REGION_TEXT},
    "validation": {"agreement": _CHOICE, "reasons": _TEXT},
    "claims": {
        FAITHFUL_CONTROL: _CHOICE,
        f"label_{INDEX_FLAG}": _CHOICE,
        f"evidence_{INDEX_FLAG}": _LABELS,
        f"reason_{INDEX_FLAG}": _TEXT,
    },
}
"""Task kind -> control name -> what it writes: the labeling configs' contract."""

Raise = Callable[[str, str, str], HumanDataError]
"""A task's error: (field, problem, fix) -> the one-line ``HumanDataError``."""


def check_results(kind: str, results: list[dict[str, Any]], error: Raise) -> None:
    """Every result of one annotation names a control of ``kind`` with its value keys.

    Relations (two linked regions) carry no control. A span region without the Labels
    control is a span without error types: an error, never read as "no types".
    """
    controls = CONTROLS[kind]
    fix = f"use runner.annotate's labeling-{kind}.xml as the project's labeling config"
    for item in results:
        if item.get("type") == "relation":
            continue
        name = item.get("from_name")
        control = controls.get(str(_generic(name)))
        if control is None:
            expected = ", ".join(c.describe(n) for n, c in controls.items())
            problem = f"unknown control {name!r}; the {kind} labeling config has {expected}"
            raise error("from_name", problem, fix)
        _check_value(kind, str(name), control, item.get("value"), error, fix)
    if kind == "coherence":
        _check_regions(results, error, fix)


def _generic(name: object) -> object:
    """A per-claim control's name as ``CONTROLS`` has it (``label_3`` -> ``label_{{idx}}``)."""
    per_claim = claim_control(name) if isinstance(name, str) else None
    return f"{per_claim[0]}_{INDEX_FLAG}" if per_claim else name


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


def _check_regions(results: list[dict[str, Any]], error: Raise, fix: str) -> None:
    """Each span region has a result of the Labels control (its error types)."""
    regions = {str(item.get("id")) for item in results if item.get("type") != "relation"}
    labelled = {str(item.get("id")) for item in results if item.get("from_name") == LABEL_CONTROL}
    for rid in sorted(regions - labelled):
        problem = f"region {rid} has no {LABEL_CONTROL!r} result (its error types)"
        raise error(LABEL_CONTROL, problem, fix)
