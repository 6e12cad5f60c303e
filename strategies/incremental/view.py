"""How incremental's trace is drawn in the summary viewer: the running summary.

Each update g_i and its compression, listed with their lengths, and a chart of the summary's
length in words over the chunks (after the update, as kept, and the word target). Steps are
read with ``.get``: the trace is a record of what happened. The shapes are
``runner.api.trace_view``'s.
"""

from __future__ import annotations

import math
from typing import Any

from runner.api import Chart, Listed, Section, Series, Step


def owns(step: Step) -> bool:
    """An update, or a compression without a level (hier's compressions have one)."""
    return step.get("kind") == "update" or step.get("kind") == "compress" and "level" not in step


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "—" if value is None else str(value)


def _number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def trace_view(steps: list[Step]) -> list[Section]:
    """Each update and compression with a one-line account, and the length chart."""
    mine = [i for i, s in enumerate(steps) if owns(s)]
    if not mine:
        return []
    compressed = {steps[i].get("index"): i for i in mine if steps[i].get("kind") == "compress"}
    updates = sorted(
        (i for i in mine if steps[i].get("kind") == "update"),
        key=lambda i: int(steps[i].get("index", 0)),
    )
    listed, updated, kept, targets = [], [], [], []
    for i in updates:
        s = steps[i]
        x = float(s.get("index", 0)) + 1
        after = steps[compressed[s.get("index")]] if s.get("index") in compressed else None
        updated.append((x, _number(s.get("words"))))
        kept.append((x, _number((after or s).get("after_words", s.get("words")))))
        targets.append((x, _number(s.get("target_words"))))
        title = (
            f"chunk {int(x)}: {_text(s.get('words'))} words, target "
            f"{_text(s.get('target_words'))}" + ("" if s.get("valid", True) else ", over budget")
        )
        listed.append(Listed(i, title))
        if after is not None:
            title = (
                f"{_text(after.get('before_words'))} → {_text(after.get('after_words'))} "
                f"words in {_text(after.get('attempts'))} attempts"
                + (", cut by the fallback" if after.get("fallback") else "")
            )
            listed.append(Listed(compressed[s.get("index")], title, ("call_id", "call_ids")))
    chart = Chart(
        "chunk",
        "words",
        (
            Series("after the update", tuple(updated)),
            Series("kept (after compression)", tuple(kept)),
            Series("word target", tuple(targets)),
        ),
    )
    facts = {
        "updates": str(len(updated)),
        "compressions": str(len(compressed)),
        "fallbacks": str(sum(bool(steps[i].get("fallback")) for i in compressed.values())),
    }
    return [
        Section(
            "incremental",
            "Incremental updating: the running summary",
            tuple(mine),
            facts,
            chart,
            steps=tuple(listed),
        )
    ]
