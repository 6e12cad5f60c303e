"""SummIt's draft: the base strategy it is built on, found by name, and what it passes it.

Both the job (``summarize``) and the estimate read these, so the draft is given the same
keywords in both.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from runner.api import ConfigError, plugin
from runner.api.params import declared

DRAFT_KEYWORDS = ("max_summary_len", "words_per_token")
"""What SummIt passes its draft beside the chunks and the summarizer, when it takes them."""


def draft_module(name: str) -> ModuleType:
    """The base strategy named ``name``, found as the job finds its own (``runner.api.plugin``)."""
    try:
        module = plugin("strategy", name)
    except ConfigError as err:
        raise ConfigError(f"strategy.draft={name}: {err}") from None
    if any(role != "model" for role in module.ROLES):
        raise ConfigError(
            f"strategy.draft={name} needs the roles {module.ROLES}; a draft gets the "
            "summarizer (model) only: choose hier, incremental or baseline"
        )
    return module


def draft_keywords(summarize: Callable[..., Any], values: dict[str, Any]) -> dict[str, Any]:
    """The ``DRAFT_KEYWORDS`` of ``values`` the draft's ``summarize`` takes.

    A researcher's draft may take none of them.
    """
    takes = declared(summarize)
    return {k: values[k] for k in DRAFT_KEYWORDS if takes.accepts(k)}
