"""The facts about a run's values (``runner.api.value.Value``), as recorded on it and read back.

The job records each metric's declared values in the tag ``metric.<label>.values`` and the
strategy's in ``strategy.values`` (JSON: value name -> facts), under the label the run gave
the metric, as ``runner.plugins.categories`` does for error types. Readers get them as one
mapping keyed by the run's metric names (``booookscore/score``, ``strategy/score``), so the
report, the console and the viewer never import a metric nor know one by name. A run recorded
before these tags has the facts its plugins declare today (imported through the registry, as
a job would), so an older run keeps its titles and axes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from runner.api.value import Value

Facts = dict[str, Value]
"""Metric name as the run logs it (``<label>/<value>``) -> its facts."""
STRATEGY = "strategy"
"""The label of a strategy's values (``strategy/score``), as ``runner.run.recording`` logs them."""
_PREFIX, _SUFFIX = "metric.", ".values"
STRATEGY_TAG = "strategy.values"


def tag(label: str) -> str:
    """The run tag holding the facts of the metric run under ``label``."""
    return f"{_PREFIX}{label}{_SUFFIX}"


def declared(module: ModuleType | Any, instance: Any = None) -> dict[str, Value]:
    """A plugin's declared values: its module's ``VALUES``, then what its ``setup`` settled.

    A metric whose value names depend on its parameters (ROUGE's types, G-Eval's dimensions)
    gives them on the ``Metric`` it returns (``Metric.values``).
    """
    found = dict(getattr(module, "VALUES", None) or {})
    found.update(getattr(instance, "values", None) or {})
    return found


def tags(metrics: Mapping[str, dict[str, Value]], strategy: dict[str, Value]) -> dict[str, str]:
    """The tags a job records: each metric label's facts, and the strategy's."""
    out = {tag(label): _dump(values) for label, values in metrics.items()}
    out[STRATEGY_TAG] = _dump(strategy)
    return out


def _dump(values: Mapping[str, Value]) -> str:
    return json.dumps({name: v.as_json() for name, v in values.items()}, separators=(",", ":"))


def recorded(
    run_tags: Mapping[str, str], params: Mapping[str, str], logged: Iterable[str] = ()
) -> Facts:
    """The facts of the run's values, keyed by metric name (``booookscore/score``).

    From the run's tags; for a run recorded before them, from the plugins named by the run's
    ``metrics`` and ``strategy`` params (each label was then the plugin's name), or, without
    a ``metrics`` param, by the groups of its ``logged`` metric names.
    """
    found = {
        key[len(_PREFIX) : -len(_SUFFIX)]: text
        for key, text in run_tags.items()
        if key.startswith(_PREFIX) and key.endswith(_SUFFIX)
    }
    if STRATEGY_TAG in run_tags:
        found[STRATEGY] = run_tags[STRATEGY_TAG]
    if not found:
        groups = dict.fromkeys(key.split("/", 1)[0] for key in logged if "/" in key)
        return _today(params.get("metrics") or ",".join(groups), params.get("strategy", ""))
    out: Facts = {}
    for label, text in found.items():
        for name, value in _values(text).items():
            out[f"{label}/{name}"] = value
    return out


def merged(runs: Iterable[tuple[Mapping[str, str], Mapping[str, str], Iterable[str]]]) -> Facts:
    """The facts of several runs (tags, params, logged names): the first run to declare wins."""
    out: Facts = {}
    for run_tags, params, logged in runs:
        for key, value in recorded(run_tags, params, logged).items():
            out.setdefault(key, value)
    return out


def _values(text: str) -> dict[str, Value]:
    """A tag's JSON as facts; what is not facts is left out (the key then titles itself)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    facts = {str(name): Value.from_json(raw) for name, raw in data.items()}
    return {name: value for name, value in facts.items() if value is not None}


def _today(labels: str, strategy: str) -> Facts:
    """The facts today's plugins declare, for the labels and strategy of an older run."""
    out: Facts = {}
    wanted = [("metrics", name, name) for name in labels.split(",") if name and name != "none"]
    if strategy:
        wanted.append(("strategy", strategy, STRATEGY))
    for kind, name, label in wanted:
        module = _module(kind, name)
        for key, value in declared(module).items():
            out[f"{label}/{key}"] = value
    return out


def _module(kind: str, name: str) -> ModuleType | None:
    from runner.plugins.registry import find, load

    try:
        return load(find(kind, name))
    except Exception:  # noqa: BLE001 - a plugin gone or broken since: its keys title themselves
        return None
