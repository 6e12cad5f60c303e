"""How a strategy's trace is drawn in the summary viewer: a few shapes the viewer renders.

A strategy module may define ``trace_view(steps) -> list[Section]``. ``steps`` is one
document's trace as logged (``traces/<doc>.json``: dicts with ``kind``, ``call_id`` and the
step's details); the sections say how to draw the steps with the shapes below: a tree of
nodes (hier's merge tree), a chart of series (incremental's summary length), rounds whose
texts the viewer diffs one to the next (SummIt's evaluate and refine loop), and trace steps
listed with a one-line title. A section names the steps it ``covers`` (by position in the
trace); the viewer lists every other step as it is.

The job calls ``draw`` when it records the run and stores the result with the traces
(``trace_views.json``): the viewer (``python -m runner.view``) imports no strategy and
renders that stored data. A strategy without ``trace_view``, a run stored before views were
recorded, or a view that raised (its error is shown): the viewer lists the steps plainly.

Part of the plugin API: imports nothing of the project, so a plugin outside this repository
draws its trace the same way as the bundled strategies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

VIEWS_FILE = "trace_views.json"
"""The run's artifact holding each document's view: doc_id -> ``draw``'s result."""
Step = dict[str, Any]
"""One trace step as logged: ``kind``, ``call_id`` and the step's details."""
Facts = dict[str, Any]
"""Short key/values shown inline, in order (the viewer formats numbers, lists, None)."""
Labelled = tuple[tuple[str, str], ...]
"""(label, text) pairs."""


@dataclass(frozen=True)
class Node:
    """A node of a tree: a text with facts, badges and the nodes it was made from."""

    title: str
    text: str = ""
    level: int = 0
    """Depth from the leaves (0 for a leaf), for styling."""
    subtitle: str = ""
    """A few words after the title on the folded line (hier: the output tokens)."""
    facts: Facts = field(default_factory=dict)
    badges: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    """Badges drawn as a warning (hier: "cut by the fallback")."""
    steps: tuple[Listed, ...] = ()
    """Trace steps shown inside the node (hier: the compression before the merge)."""
    children: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Series:
    """One line of a chart: (x, y) points, y None where there is no value."""

    name: str
    points: tuple[tuple[float, float | None], ...]


@dataclass(frozen=True)
class Chart:
    """A line chart of up to three series (the viewer styles the first three)."""

    x_label: str
    y_label: str
    series: tuple[Series, ...]
    y_range: tuple[float, float] | None = None
    """The y axis's fixed range; None: from 0 to the largest value."""


@dataclass(frozen=True)
class Listed:
    """A trace step listed as it is, with a one-line title."""

    index: int
    """Its position in the trace."""
    title: str = ""
    """'' shows its first facts instead."""
    hide: tuple[str, ...] = ("call_id",)
    """Fields not shown."""


@dataclass(frozen=True)
class Round:
    """One round of a loop; the viewer shows the change of ``text`` from the previous round."""

    title: str
    text: str
    text_label: str = "the text"
    """The label of ``text``, shown folded."""
    diff_label: str = "changes from the previous round"
    score: float | None = None
    tags: tuple[str, ...] = ()
    """Words shown on the folded line after the score (SummIt: the operations' kinds)."""
    facts: Facts = field(default_factory=dict)
    notes: Labelled = ()
    """Labelled texts shown open (SummIt: the justification)."""
    lists: tuple[tuple[str, Labelled], ...] = ()
    """Labelled lists of (kind, item) (SummIt: the operations, the dropped ones)."""
    folded: Labelled = ()
    """Labelled texts shown folded (SummIt: the evaluator's answer)."""


@dataclass(frozen=True)
class Section:
    """One part of the viewer's "how this summary was made" panel."""

    name: str
    """A short name, also the section's CSS class (``hier``, ``summit``)."""
    title: str
    covers: tuple[int, ...] = ()
    """Positions of the trace steps this section draws; the others are listed as they are."""
    facts: Facts = field(default_factory=dict)
    chart: Chart | None = None
    tree: Node | None = None
    steps: tuple[Listed, ...] = ()
    rounds: tuple[Round, ...] = ()


TraceView = Callable[[list[Step]], Sequence[Section]]
"""A strategy's ``trace_view``."""


def draw(trace_view: TraceView | None, steps: list[Step]) -> dict[str, Any] | None:
    """The view of one document's trace as JSON data: ``{"sections": [...]}``.

    ``{"error": "<type>: <message>"}`` when ``trace_view`` raised (a view bug never fails
    a run: the viewer lists the steps with the error); None without ``trace_view``.
    """
    if trace_view is None:
        return None
    try:
        return {"sections": [asdict(s) for s in trace_view(steps)]}
    except Exception as err:  # noqa: BLE001 - a view bug must not fail the run or hide the steps
        return {"error": f"{type(err).__name__}: {err}"}


def picked(step: Step, *keys: str) -> Facts:
    """The named fields the step has, in the order asked."""
    return {k: step[k] for k in keys if k in step}
