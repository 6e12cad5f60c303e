"""Any trace step as the viewer shows it: short facts inline, long texts apart.

The generic view of a step: every step no section of the strategy's stored view covers, all
the steps of a run stored without a view, and the steps a view lists (a compression, a
draft) with its own title. Split from ``runner.view.trace`` (which renders the stored view).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from runner.api.text import word_opcodes
from runner.view.data import Step

_SHORT = 80  # a string field longer than this is shown as text, not inline as a fact


@dataclass(frozen=True)
class Fact:
    """A short key/value shown inline."""

    key: str
    value: str


@dataclass
class Shown:
    """A trace step shown generically: its kind, short facts and long texts."""

    kind: str
    facts: list[Fact]
    texts: list[tuple[str, str]]
    title: str = ""
    """A one-line account of the step; '' shows its first facts instead."""


def fact_text(value: Any) -> str:
    """A value as short text: numbers trimmed, lists and dicts as compact JSON."""
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else "—"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return "—" if value is None else str(value)


def shown(step: Step, skip: Iterable[str] = (), summary: str = "") -> Shown:
    """Any step as its kind, short facts (scalars, short lists) and long texts.

    A text that is the final ``summary`` itself (``given``, ``postprocess``) is named, not
    repeated.
    """
    facts: list[Fact] = []
    texts: list[tuple[str, str]] = []
    for key, value in step.items():
        if key in ("kind", *skip):
            continue
        if summary and value == summary:
            facts.append(Fact(key, "the final summary, shown above"))
            continue
        text = fact_text(value)
        if (
            isinstance(value, str)
            and (len(value) > _SHORT or "\n" in value)
            or len(text) > 2 * _SHORT
        ):
            texts.append((key, value if isinstance(value, str) else json.dumps(value, indent=1)))
        else:
            facts.append(Fact(key, text))
    return Shown(str(step.get("kind", "?")), facts, texts)


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """Word-level diff as runs of (op, words); 'replace' becomes a delete and an insert."""
    out: list[tuple[str, str]] = []
    for tag, old, new in word_opcodes(before, after):
        if old:
            out.append(("equal" if tag == "equal" else "delete", old))
        if new and tag != "equal":
            out.append(("insert", new))
    return out
