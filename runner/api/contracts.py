"""What a strategy, metric or data loader module is, declared once as a typing ``Protocol``.

inspect_ai declares a scorer as a ``Scorer`` Protocol; here the plugin is a module, and mypy
holds a module against a Protocol when the module is assigned to it::

    from runner.api import StrategyModule
    from my_pkg import lead

    _checked: StrategyModule = lead  # mypy: a missing ROLES, a summarize returning str

The same declarations are what ``runner.plugins.contract`` checks when it loads a plugin
(its one-line errors name the members these Protocols list). Only the required members are
here: the optional hooks (``estimate``, ``VALUES``, ``FILE_PARAMS``, ``PLUGIN_PARAMS``,
``BATCH_ROLES``, ``CATEGORIES``, ``HUMAN``, ``HUMAN_FILES``, ``PROMPT_ROOT``, ``trace_view``)
are described in ``runner.api`` and checked when present.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from runner.api.metric import Metric
from runner.api.types import Document, StrategyResult, WorkItem


@runtime_checkable
class StrategyModule(Protocol):
    """A strategy: its roles, the run-level keys it ignores, its prompts, ``summarize``."""

    @property
    def ROLES(self) -> Sequence[str]:
        """The model roles ``summarize`` takes as keyword arguments (``("model",)``)."""
        ...

    @property
    def IGNORES(self) -> Mapping[str, str]:
        """Run-level keys it does not read, each with why (a note when a run sets one)."""
        ...

    @property
    def PROMPT_DIRS(self) -> Sequence[str]:
        """Its folders under ``prompts/``: logged and part of the fingerprint."""
        ...

    @property
    def summarize(self) -> Callable[..., StrategyResult]:
        """``summarize(chunks, <roles>, *, <params>) -> StrategyResult``."""
        ...


@runtime_checkable
class MetricModule(Protocol):
    """A metric: its roles, its prompts, ``setup`` returning the job's ``Metric``."""

    @property
    def ROLES(self) -> Sequence[str]:
        """The model roles ``setup`` takes as keyword arguments (``("judge",)``)."""
        ...

    @property
    def PROMPT_DIRS(self) -> Sequence[str]:
        """Its folders under ``prompts/``: logged and part of the fingerprint."""
        ...

    @property
    def setup(self) -> Callable[..., Metric]:
        """``setup(<roles>, *, <params>) -> Metric``, once per job, before its run exists."""
        ...


@runtime_checkable
class DataModule(Protocol):
    """A data loader: the ``data.*`` keys it reads and ``load``."""

    @property
    def KEYS(self) -> Sequence[str]:
        """The ``data.*`` keys ``load`` takes as keyword arguments."""
        ...

    @property
    def load(self) -> Callable[..., Sequence[Document] | Sequence[WorkItem]]:
        """``load(*, <keys>) -> list[Document]`` (or ``list[WorkItem]``)."""
        ...


CONTRACTS: dict[str, type] = {
    "strategy": StrategyModule,
    "metrics": MetricModule,
    "data": DataModule,
}
"""Each plugin kind's Protocol, by the registry's kind names."""


def members(kind: str) -> tuple[tuple[str, ...], str]:
    """(the constants a module of ``kind`` declares, its entry function), from its Protocol."""
    names = [name for name, value in vars(CONTRACTS[kind]).items() if isinstance(value, property)]
    constants = tuple(name for name in names if name.isupper())
    (entry,) = [name for name in names if not name.isupper()]
    return constants, entry
