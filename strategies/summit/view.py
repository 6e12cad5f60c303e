"""How SummIt's trace is drawn in the summary viewer: evaluate and refine, round by round.

The drafting strategy's own view first (hier's tree, incremental's updates, a researcher's
strategy's own ``trace_view``: the strategy the ``drafted`` step names, found through the
registry as the draft itself was), then one round per iteration: the evaluator's score,
justification and operations, the change from the previous summary, and the score curve.
Steps are read with ``.get``: the trace is a record of what happened. The shapes are
``runner.api.trace_view``'s.
"""

from __future__ import annotations

import math
from typing import Any

from runner.api import Chart, ConfigError, Listed, Round, Section, Series, Step, picked, plugin

DRAFTED = "drafted"
"""The step that ends a draft strategy's steps and names it (``{"strategy": name}``)."""
_MINE = ("draft", "iteration", "stop")


def _number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _operations(found: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(o.get("kind", "")), str(o.get("target", ""))) for o in found or [])


def _round(step: Step, number: int) -> Round:
    operations, dropped = (
        _operations(step.get("operations")),
        _operations(step.get("dropped_operations")),
    )
    justification = str(step.get("justification") or "")
    return Round(
        f"Iteration {number}",
        str(step.get("summary") or ""),
        "the summary evaluated",
        "changes from the previous summary",
        _number(step.get("score")),
        tuple(kind for kind, _ in operations),
        picked(step, "stop_reason", "stop_token", "evaluator_tokens", "cost_usd", "distribution"),
        (("justification", justification),) if justification else (),
        tuple(
            (label, items)
            for label, items in (("operations", operations), ("dropped (not allowed)", dropped))
            if items
        ),
        (("the evaluator's answer", str(step.get("evaluation") or "")),),
    )


def summit_section(steps: list[Step]) -> list[Section]:
    """The loop's own section: the draft, each iteration as a round, the score curve."""
    mine = [i for i, s in enumerate(steps) if s.get("kind") in _MINE]
    if not mine:
        return []
    iterations = sorted(
        (i for i in mine if steps[i].get("kind") == "iteration"),
        key=lambda i: int(steps[i].get("iteration", 0)),
    )
    numbers = [int(steps[i].get("iteration", n + 1)) for n, i in enumerate(iterations)]
    rounds = tuple(_round(steps[i], n) for n, i in zip(numbers, iterations, strict=True))
    stop = next((steps[i] for i in mine if steps[i].get("kind") == "stop"), {})
    draft = [Listed(i) for i in mine if steps[i].get("kind") == "draft"][:1]
    chart = Chart(
        "iteration",
        "score",
        (
            Series(
                "score", tuple((float(n), r.score) for n, r in zip(numbers, rounds, strict=True))
            ),
        ),
        (1.0, 5.0),
    )
    facts = picked(stop, "reason", "final", "chosen_iteration")
    return [
        Section(
            "summit",
            "SummIt: evaluate and refine",
            tuple(mine),
            facts,
            chart,
            steps=tuple(draft),
            rounds=rounds,
        )
    ]


def trace_view(steps: list[Step]) -> list[Section]:
    """The draft strategy's view of its own steps (when one drafted), then the loop's."""
    return [*draft_sections(steps), *summit_section(steps)]


def draft_sections(steps: list[Step]) -> list[Section]:
    """The view the drafting strategy gives of the steps before ``drafted``.

    [] when no strategy drafted or it has no ``trace_view`` (its steps are then listed as
    they are).
    """
    at = next((i for i, s in enumerate(steps) if s.get("kind") == DRAFTED), None)
    if at is None:
        return []
    try:
        module = plugin("strategy", str(steps[at].get("strategy")))
    except ConfigError:
        return []
    view = getattr(module, "trace_view", None)
    return list(view(steps[:at])) if view is not None else []
