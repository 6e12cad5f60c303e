"""A sweep cell's config from the sweep's own composed config, without composing it again.

A cell that differs from the sweep's config only by plain values (``chunk=512``) gets them
set on a copy (~1 ms), as Hydra sets them after composing; anything else (a config group, an
addition or deletion, a Hydra setting) is composed by the sweeper (~75 ms).
"""

import copy
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

SweepBase = tuple[DictConfig | None, dict[str, Any], set[str]]
"""The sweep's composed config without ``hydra`` (None when it reads Hydra's settings), the
values its command line set (key -> value), and its config groups."""
_UNSET = object()


def values_set(sweep: SweepBase, cell: list[str]) -> DictConfig | None:
    """The cell's config made from the sweep's own when only plain values differ (~1 ms).

    That is when the cell differs from the sweep's own composed config only by plain values
    (``chunk=512``, ``model.temperature=0.2``): those are set on a copy of it, as Hydra sets
    them after composing. None when a difference is a config group, an addition or
    deletion, a Hydra setting, or touches a key the command line set too, or when the
    config reads Hydra's settings: then it is composed.
    """
    base, given, groups = sweep
    if base is None:
        return None
    changes = [
        o
        for o in OverridesParser.create().parse_overrides(list(cell))
        if o.is_sweep_override() or given.get(o.get_key_element(), _UNSET) != o.value()
    ]
    for change in changes:
        key = change.key_or_group
        if (
            change.is_sweep_override()
            or change.is_hydra_override()
            or change.package is not None
            or change.type is not OverrideType.CHANGE
            or key in groups
            or any(_nested(key, other) for other in given)
        ):
            return None
    task = copy.deepcopy(base)
    try:
        for change in changes:
            OmegaConf.update(task, change.key_or_group, change.value(), merge=True)
    except Exception:  # noqa: BLE001  # e.g. an unknown key: composing says so in Hydra's words
        return None
    return task


def _nested(key: str, other: str) -> bool:
    other = other.lstrip("+~")
    return key == other or key.startswith(other + ".") or other.startswith(key + ".")


def sweep_base(config: DictConfig | None) -> SweepBase:
    """The sweep's composed config without ``hydra``, its command-line values, its config groups.

    The config is None when it interpolates Hydra's settings; the values are those its command
    line set (key -> value).
    """
    assert config is not None
    base = copy.deepcopy(config)
    with read_write(base), open_dict(base):
        del base["hydra"]
    given = {
        o.get_key_element(): o.value()
        for o in OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
        if not o.is_sweep_override()
    }
    groups = {str(k) for k in config.hydra.runtime.choices}
    return (None if "hydra" in OmegaConf.to_yaml(base) else base), given, groups
