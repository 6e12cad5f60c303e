"""A plugin's parameters, as its entry function declares them: the one place they are read.

A strategy's ``summarize``, a metric's ``setup`` and a data loader's ``load`` name their
parameters as keyword-only arguments with their defaults. That signature is the one
declaration: the run's config is checked against it, the config reference is generated from
it, a plugin's ``estimate`` hook gets its defaults filled in from it, and SummIt passes its
draft only what the draft's ``summarize`` takes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Declared:
    """The keyword-only parameters of an entry function, and whether it takes any keyword."""

    params: Mapping[str, inspect.Parameter]
    open: bool
    """True when it takes ``**kwargs`` too: every keyword is accepted."""

    @property
    def defaults(self) -> dict[str, Any]:
        """Each parameter with a default, by name."""
        return {n: p.default for n, p in self.params.items() if p.default is not p.empty}

    def accepts(self, name: str) -> bool:
        """Whether the function takes the keyword ``name``."""
        return self.open or name in self.params


def declared(function: Callable[..., Any]) -> Declared:
    """What ``function`` (a plugin's ``summarize``, ``setup`` or ``load``) declares."""
    parameters = inspect.signature(function).parameters.values()
    return Declared(
        {p.name: p for p in parameters if p.kind == p.KEYWORD_ONLY},
        any(p.kind == p.VAR_KEYWORD for p in parameters),
    )
