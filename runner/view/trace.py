"""How each summary was built, for the viewer: the stored trace view turned into sections.

How a strategy's trace is drawn belongs to the strategy: its ``trace_view`` describes the
trace with the shapes of ``runner.api.trace_view`` (a tree of nodes, a chart, rounds, listed
steps), the job stores that description beside the traces (``trace_views.json``), and this
module only renders it, so ``python -m runner.view`` imports no strategy and a plugin's
strategy is drawn without a change here. Every step no section covers is listed generically
(``runner.view.steps``); so are all the steps of a run stored without a view (before views
were recorded, or a strategy without ``trace_view``) and of a view that failed, with the
reason. Stored data is read with ``.get`` throughout: a malformed view falls back to the
plain steps, never an error. The charts are ``runner.view.chart``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.view.chart import Chart, line_chart
from runner.view.data import Step, number
from runner.view.steps import Fact, Shown, fact_text, shown, word_diff


@dataclass
class Node:
    """A node of a tree (hier: a level-0 chunk summary or a merge of the level below)."""

    title: str
    level: int
    text: str
    subtitle: str = ""
    facts: list[Fact] = field(default_factory=list)
    badges: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Badges drawn as a warning ("cut by the fallback")."""
    steps: list[Shown] = field(default_factory=list)
    """Trace steps shown inside the node (the oversize guard's compression)."""
    children: list[Node] = field(default_factory=list)


@dataclass(frozen=True)
class Round:
    """One round of a loop (a SummIt iteration) and the diff to the previous round's text."""

    title: str
    score: float | None
    tags: list[str]
    facts: list[Fact]
    notes: list[tuple[str, str]]
    lists: list[tuple[str, list[tuple[str, str]]]]
    diff: list[tuple[str, str]]
    """(op, words) with op 'equal', 'delete' or 'insert'."""
    diff_label: str
    text: str
    text_label: str
    folded: list[tuple[str, str]]


@dataclass
class Section:
    """One part of the "how it was made" panel."""

    kind: str
    """The section's name and CSS class ('hier', 'summit'...); 'steps' for the plain listing."""
    title: str
    facts: list[Fact] = field(default_factory=list)
    tree: Node | None = None
    chart: Chart | None = None
    steps: list[Shown] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)


def _facts(raw: Any) -> list[Fact]:
    return [Fact(str(k), fact_text(v)) for k, v in (raw or {}).items()]


def _pairs(raw: Any) -> list[tuple[str, str]]:
    return [(str(a), str(b)) for a, b in raw or []]


def _listed(raw: Any, steps: dict[int, Step]) -> list[Shown]:
    out = []
    for item in raw or []:
        step = steps.get(int(item.get("index", -1)))
        if step is not None:
            listed = shown(step, skip=tuple(item.get("hide") or ()))
            listed.title = str(item.get("title") or "")
            out.append(listed)
    return out


def _node(raw: dict[str, Any], steps: dict[int, Step]) -> Node:
    return Node(
        str(raw.get("title", "")),
        int(raw.get("level") or 0),
        str(raw.get("text", "")),
        str(raw.get("subtitle") or ""),
        _facts(raw.get("facts")),
        [str(b) for b in raw.get("badges") or []],
        [str(w) for w in raw.get("warnings") or []],
        _listed(raw.get("steps"), steps),
        [_node(child, steps) for child in raw.get("children") or []],
    )


def _chart(raw: dict[str, Any]) -> Chart:
    series = [
        (str(s.get("name", "")), f"s{i + 1}", [(float(x), number(y)) for x, y in s.get("points")])
        for i, s in enumerate(raw.get("series") or [])
    ]
    y_range = raw.get("y_range")
    return line_chart(
        series,
        str(raw.get("x_label", "")),
        str(raw.get("y_label", "")),
        (float(y_range[0]), float(y_range[1])) if y_range else None,
    )


def _rounds(raw: Any) -> list[Round]:
    rounds: list[Round] = []
    for r in raw or []:
        text = str(r.get("text") or "")
        rounds.append(
            Round(
                str(r.get("title", "")),
                number(r.get("score")),
                [str(t) for t in r.get("tags") or []],
                _facts(r.get("facts")),
                _pairs(r.get("notes")),
                [(str(label), _pairs(items)) for label, items in r.get("lists") or []],
                word_diff(rounds[-1].text, text) if rounds else [],
                str(r.get("diff_label") or "changes from the previous round"),
                text,
                str(r.get("text_label") or "the text"),
                _pairs(r.get("folded")),
            )
        )
    return rounds


def _section(raw: dict[str, Any], steps: dict[int, Step]) -> Section:
    return Section(
        str(raw.get("name") or "view"),
        str(raw.get("title", "")),
        _facts(raw.get("facts")),
        _node(raw["tree"], steps) if raw.get("tree") else None,
        _chart(raw["chart"]) if raw.get("chart") else None,
        _listed(raw.get("steps"), steps),
        _rounds(raw.get("rounds")),
    )


def _drawn(view: Any, steps: dict[int, Step]) -> tuple[list[Section], set[int]]:
    """The strategy's sections and the steps they cover (none without a view)."""
    if not isinstance(view, dict):
        return [], set()
    sections: list[Section] = []
    covered: set[int] = set()
    for raw in view.get("sections") or []:
        sections.append(_section(raw, steps))
        covered.update(int(i) for i in raw.get("covers") or [])
    return sections, covered


def _failed(steps: dict[int, Step], reason: str) -> Section:
    return Section(
        "steps",
        f"Steps (the strategy's view failed: {reason})",
        steps=[shown(s) for s in steps.values()],
    )


def trace_sections(trace: Any, summary: str = "", view: Any = None) -> list[Section]:
    """The trace as sections: the strategy's stored ``view`` of it, then the other steps.

    ``view`` is the document's entry of ``trace_views.json`` (``runner.api.trace_view.draw``);
    None lists every step generically. A view that failed, or cannot be drawn (malformed
    data), lists every step generically under the reason, never an error.
    """
    listed = trace if isinstance(trace, list) else []
    steps = {i: s for i, s in enumerate(listed) if isinstance(s, dict)}
    if isinstance(view, dict) and "error" in view:
        return [_failed(steps, str(view["error"]))]
    try:
        sections, covered = _drawn(view, steps)
    except Exception as err:  # noqa: BLE001 - a view bug must not hide the steps
        return [_failed(steps, f"{type(err).__name__}: {err}")]
    rest = [s for i, s in steps.items() if i not in covered]
    if rest:
        sections.append(
            Section("steps", "Steps", steps=[shown(s, ("call_id",), summary) for s in rest])
        )
    return sections
