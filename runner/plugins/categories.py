"""A metric's ``CATEGORIES`` as recorded on a run, and read back by the viewer and the report.

The job records each metric's categories (``(display label, value key)`` pairs: BooookScore's
eight error types and their rates) in the tag ``metric.<label>.categories`` (JSON, ``[]`` for
a metric without any), keyed by the label the run gave the metric. The viewer's legend and
the report's error-type figure read them there, by label, so they need not import a metric
nor know one by name. A run recorded before these tags has none: its categories are those
the plugin named by each label declares today (imported through the registry, as a job
would), so an older run keeps its legend and figure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from types import ModuleType

Categories = tuple[tuple[str, str], ...]
"""(display label, value key) pairs, in the metric's order."""
_PREFIX, _SUFFIX = "metric.", ".categories"


def tag(label: str) -> str:
    """The run tag holding the categories of the metric run under ``label``."""
    return f"{_PREFIX}{label}{_SUFFIX}"


def tags(modules: Mapping[str, ModuleType]) -> dict[str, str]:
    """The tags a job records: label -> its module's ``CATEGORIES`` as JSON (``[]`` for none)."""
    return {
        tag(label): json.dumps([list(pair) for pair in getattr(module, "CATEGORIES", ())])
        for label, module in modules.items()
    }


def recorded(
    run_tags: Mapping[str, str], params: Mapping[str, str], logged: Iterable[str] = ()
) -> dict[str, Categories]:
    """The categories (by label) of the run's metrics that have any, in the run's order.

    From the run's tags; for a run recorded before them, from the plugins named by the
    run's ``metrics`` param (each label was then the plugin's name), or, without one, by the
    groups of its ``logged`` metric names (``booookscore/score`` -> ``booookscore``).
    """
    found = {
        key[len(_PREFIX) : -len(_SUFFIX)]: value
        for key, value in run_tags.items()
        if key.startswith(_PREFIX) and key.endswith(_SUFFIX)
    }
    if not found:
        groups = dict.fromkeys(key.split("/", 1)[0] for key in logged if "/" in key)
        return _declared(params.get("metrics") or ",".join(groups))
    out: dict[str, Categories] = {}
    for label, text in found.items():
        pairs = _pairs(text)
        if pairs:
            out[label] = pairs
    return out


def _pairs(text: str) -> Categories:
    """The JSON of a tag as pairs; a tag that is not pairs of names counts as none."""
    try:
        value = json.loads(text)
    except ValueError:
        return ()
    if not isinstance(value, list):
        return ()
    return tuple(
        (str(p[0]), str(p[1])) for p in value if isinstance(p, list) and len(p) == 2 and all(p)
    )


def _declared(labels: str) -> dict[str, Categories]:
    """The categories today's plugins declare, for the metric labels of an older run."""
    from runner.plugins.registry import find, load

    out: dict[str, Categories] = {}
    for label in (name for name in labels.split(",") if name and name != "none"):
        try:
            module = load(find("metrics", label))
        except Exception:  # noqa: BLE001 - a plugin gone or broken since: no legend, no error
            continue
        pairs = tuple((str(a), str(b)) for a, b in getattr(module, "CATEGORIES", ()))
        if pairs:
            out[label] = pairs
    return out
