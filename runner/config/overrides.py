"""Command-line overrides (``chunk=1024``, ``+experiment=x``, ``a=1,2``) read once, by Hydra.

Every part of the runner that looks at an override string (the run's name and params, the
keys a sweep varies, the preset it names, the keys a strategy ignores, the sweeper's cells)
reads it here with Hydra's own ``OverridesParser``, so a quoted comma, a list value or a
``sort(...)`` sweep means the same everywhere as it does to Hydra.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override as HydraOverride
from hydra.core.override_parser.types import OverrideType

NON_EXPERIMENT_KEYS = (
    "tracking",
    "cache",
    "progress",
    "hydra",
    "budget",
    "force",
    "on_error",
    "verbose",
    "estimate",
)
"""Top-level keys that say where results go or how they are shown, not what they are: left
out of the fingerprint, the run's params and its name (``Override.experiment``)."""

_PREFIXES = {
    OverrideType.CHANGE: "",
    OverrideType.ADD: "+",
    OverrideType.FORCE_ADD: "++",
    OverrideType.DEL: "~",
}


@dataclass(frozen=True)
class Override:
    """One override as Hydra reads it.

    ``key`` is what names the config node as the user wrote it, without the prefix and with
    a ``@package`` kept (``db@pkg``); ``value`` the text after the first ``=`` as given
    (``""`` for ``~key``), so a path or a sweep keeps its spelling.
    """

    text: str
    """The override as given: ``+experiment=local_demo``."""
    prefix: str
    """``""``, ``"+"`` (add), ``"++"`` (add or change) or ``"~"`` (delete)."""
    key: str
    """``chunk``, ``model.temperature``, ``hydra/launcher``, ``db@pkg``."""
    path: str
    """The node or config group without its package: ``db`` for ``db@pkg``."""
    package: str | None
    """The ``@package`` of a group override, else None."""
    value: str
    """The value's text as given: ``1024``, ``1,2``, ``range(1,3)``; ``""`` for ``~key``."""
    sweep: bool
    """More than one value: ``a=1,2``, ``choice(...)``, ``range(...)``, ``glob(...)``..."""
    parsed: HydraOverride = field(compare=False, repr=False)
    """Hydra's own reading (its ``value()`` is the typed value: ``1024``, ``[1, 2]``)."""

    @property
    def top(self) -> str:
        """The top-level config key or group: ``model`` for ``model.temperature``."""
        return re.split(r"[./]", self.path, maxsplit=1)[0]

    @property
    def experiment(self) -> bool:
        """Whether it changes the experiment (``chunk=1024``).

        ``tracking.uri=...`` says where results go and ``progress=off`` how they are shown:
        neither enters the fingerprint, the run's params or its name.
        """
        return self.top not in NON_EXPERIMENT_KEYS

    @property
    def typed_value(self) -> Any:
        """The value as Hydra types it (``1024``, ``[1, 2]``); a sweep's is its sweep object."""
        return self.parsed.value()


@functools.cache
def _parser() -> OverridesParser:
    return OverridesParser.create()


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Override:
    """One override string read by Hydra's grammar (a malformed one raises Hydra's error)."""
    hydra = _parser().parse_override(text)
    return Override(
        text=text,
        prefix=_PREFIXES[hydra.type],
        key=hydra.key_or_group + (f"@{hydra.package}" if hydra.package else ""),
        path=hydra.key_or_group,
        package=hydra.package,
        value=text.partition("=")[2],
        sweep=hydra.is_sweep_override(),
        parsed=hydra,
    )


def parse_all(texts: Iterable[str]) -> list[Override]:
    """Each override of a command line, in order."""
    return [parse(text) for text in texts]


def is_experiment_override(text: str) -> bool:
    """Whether a ``key=value`` override changes the experiment (``Override.experiment``)."""
    return parse(text).experiment


def swept(texts: Iterable[str]) -> list[Override]:
    """The overrides with more than one value (``a=1,2``, ``range(...)``), in order."""
    return [o for o in parse_all(texts) if o.sweep]


def choice(texts: Iterable[str], group: str) -> str | None:
    """The option a command line picks for a config group (``+experiment=x`` -> ``x``).

    None when it picks none; a deletion (``~group``) picks none.
    """
    for o in parse_all(texts):
        if o.key == group and o.prefix != "~":
            return o.value
    return None


def is_setting(key: str) -> bool:
    """True for a run param that says how a job ran, not what it computed (as in the fingerprint).

    What tells one cell of an experiment from another is the params left: a report's versions
    and a sweep's superseded jobs compare those. ``runner.config.run_config`` is imported here,
    not with this module: it imports every strategy and metric to learn their roles.
    """
    from runner.config.run_config import ALL_ROLES
    from runner.llm.spec import NOT_IN_FINGERPRINT

    parts = key.split(".")
    if parts[0] in NON_EXPERIMENT_KEYS:
        return True
    return parts[0] in ALL_ROLES and len(parts) > 1 and parts[1] in NOT_IN_FINGERPRINT
