"""How each summary was built, for the viewer: trace steps turned into sections.

For ``hier`` the merge tree by level, for ``incremental`` each update and compression with
the summary's length, for ``summit`` each iteration's feedback, operations, word diff and
score curve. Steps are read with ``.get`` throughout: a trace is a record of what
happened, and a kind or a field this module does not know is shown as plain facts rather
than refused. Split from ``runner.view.data`` (the marked summaries and score columns);
the generic view of a step is ``runner.view.steps``, the charts ``runner.view.chart``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runner.view.chart import Chart, line_chart
from runner.view.data import Step, number
from runner.view.steps import Fact, Shown, fact_text, pick, shown, word_diff


@dataclass
class Node:
    """A node of hier's merge tree: a level-0 chunk summary or a merge of the level below."""

    title: str
    level: int
    text: str
    facts: list[Fact]
    fallback: bool
    children: list[Node] = field(default_factory=list)
    compressed: Shown | None = None
    """The oversize guard's compression of this summary before its parent merged it."""


@dataclass(frozen=True)
class Round:
    """One SummIt iteration: the evaluator's feedback and the diff to the previous summary."""

    number: int
    score: float | None
    facts: list[Fact]
    operations: list[tuple[str, str]]
    dropped: list[tuple[str, str]]
    justification: str
    evaluation: str
    diff: list[tuple[str, str]]
    """(op, words) with op 'equal', 'delete' or 'insert'."""
    summary: str


@dataclass
class Section:
    """One part of the "how it was made" panel."""

    kind: str
    """'hier', 'incremental', 'summit' or 'steps' (anything else, generically)."""
    title: str
    facts: list[Fact] = field(default_factory=list)
    tree: Node | None = None
    chart: Chart | None = None
    steps: list[Shown] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)


def _hier_node(step: Step, children: list[Node]) -> Node:
    level = int(step.get("level") or 0)
    if step.get("kind") == "merge":
        kids = step.get("children") or []
        span = f"{kids[0] + 1}–{kids[-1] + 1}" if len(kids) > 1 else fact_text(kids)
        title = f"Level {level} · merge {int(step.get('index', 0)) + 1} of summaries {span}"
        facts = pick(
            step,
            "output_tokens",
            "budget",
            "prompt_tokens",
            "context_tokens",
            "attempts",
            "word_limits",
        )
    else:
        chunk = step["chunk"] if "chunk" in step else step.get("index", 0)
        title = f"Level 0 · chunk {int(chunk) + 1}"
        facts = pick(
            step,
            "output_tokens",
            "budget",
            "chunk_tokens",
            "prompt_tokens",
            "attempts",
            "word_limits",
        )
    return Node(
        title, level, str(step.get("text", "")), facts, bool(step.get("fallback")), children
    )


def hier_section(steps: list[Step]) -> Section:
    """The merge tree: level-0 summaries as leaves, each merge over the children it packed."""
    below = [
        _hier_node(s, [])
        for s in sorted(
            (s for s in steps if s.get("kind") == "summarize"), key=lambda s: int(s.get("index", 0))
        )
    ]
    levels = [below]
    merges = [s for s in steps if s.get("kind") == "merge"]
    guarded = [s for s in steps if s.get("kind") == "compress"]
    for level in sorted({int(m.get("level", 1)) for m in merges}):
        for c in (c for c in guarded if int(c.get("level", -1)) == level):
            if 0 <= int(c.get("child", -1)) < len(below):
                below[int(c["child"])].compressed = shown(c, skip=("call_id", "call_ids", "child"))
        here = sorted(
            (m for m in merges if int(m.get("level", 1)) == level),
            key=lambda m: int(m.get("index", 0)),
        )
        below = [
            _hier_node(m, [below[i] for i in m.get("children") or [] if 0 <= i < len(below)])
            for m in here
        ]
        levels.append(below)
    facts = [
        Fact(
            f"level {i}",
            f"{len(nodes)} summaries, {sum(n.fallback for n in nodes)} cut by the fallback",
        )
        for i, nodes in enumerate(levels)
    ]
    top = (
        below[0]
        if len(below) == 1
        else Node("(no single top summary)", len(levels), "", [], False, below)
    )
    return Section("hier", "Hierarchical merging: the merge tree", facts, tree=top)


def incremental_section(steps: list[Step]) -> Section:
    """Each update g_i and its compression, and the summary's length in words over the chunks."""
    compressed = {s.get("index"): s for s in steps if s.get("kind") == "compress"}
    shown_steps, updated, kept, targets = [], [], [], []
    for s in sorted(
        (s for s in steps if s.get("kind") == "update"), key=lambda s: int(s.get("index", 0))
    ):
        x = float(s.get("index", 0)) + 1
        after = compressed.get(s.get("index"))
        updated.append((x, number(s.get("words"))))
        kept.append((x, number((after or s).get("after_words", s.get("words")))))
        targets.append((x, number(s.get("target_words"))))
        update = shown(s, skip=("call_id",))
        update.title = (
            f"chunk {int(x)}: {fact_text(s.get('words'))} words, target "
            f"{fact_text(s.get('target_words'))}"
            + ("" if s.get("valid", True) else ", over budget")
        )
        shown_steps.append(update)
        if after:
            compression = shown(after, skip=("call_id", "call_ids"))
            compression.title = (
                f"{fact_text(after.get('before_words'))} → {fact_text(after.get('after_words'))} "
                f"words in {fact_text(after.get('attempts'))} attempts"
                + (", cut by the fallback" if after.get("fallback") else "")
            )
            shown_steps.append(compression)
    chart = line_chart(
        [
            ("after the update", "s1", updated),
            ("kept (after compression)", "s2", kept),
            ("word target", "s3", targets),
        ],
        "chunk",
        "words",
    )
    facts = [
        Fact("updates", str(len(updated))),
        Fact("compressions", str(len(compressed))),
        Fact("fallbacks", str(sum(bool(c.get("fallback")) for c in compressed.values()))),
    ]
    return Section(
        "incremental",
        "Incremental updating: the running summary",
        facts,
        chart=chart,
        steps=shown_steps,
    )


def summit_section(steps: list[Step]) -> Section:
    """Each iteration's feedback, operations and word diff, and the score curve."""
    rounds: list[Round] = []
    draft = next((s for s in steps if s.get("kind") == "draft"), None)
    previous = str(draft.get("text", "")) if draft else ""
    for s in sorted(
        (s for s in steps if s.get("kind") == "iteration"), key=lambda s: int(s.get("iteration", 0))
    ):
        summary = str(s.get("summary") or "")
        ops = [
            (str(o.get("kind", "")), str(o.get("target", ""))) for o in s.get("operations") or []
        ]
        dropped = [
            (str(o.get("kind", "")), str(o.get("target", "")))
            for o in s.get("dropped_operations") or []
        ]
        rounds.append(
            Round(
                int(s.get("iteration", len(rounds) + 1)),
                number(s.get("score")),
                pick(
                    s, "stop_reason", "stop_token", "evaluator_tokens", "cost_usd", "distribution"
                ),
                ops,
                dropped,
                str(s.get("justification") or ""),
                str(s.get("evaluation") or ""),
                word_diff(previous, summary) if rounds else [],
                summary,
            )
        )
        previous = summary
    stop = next((s for s in steps if s.get("kind") == "stop"), {})
    facts = pick(stop, "reason", "final", "chosen_iteration")
    chart = line_chart(
        [("score", "s1", [(float(r.number), r.score) for r in rounds])],
        "iteration",
        "score",
        (1.0, 5.0),
    )
    section = Section("summit", "SummIt: evaluate and refine", facts, chart=chart, rounds=rounds)
    if draft:
        section.steps.append(shown(draft, skip=("call_id",)))
    return section


Owns = Callable[[Step], bool]
"""True for a step a strategy's view shows."""
Build = Callable[[list[Step]], Section]
"""A strategy's view of the steps it owns."""

_BUILDERS: tuple[tuple[str, Owns, Build], ...] = (
    (
        "hier",
        lambda s: (
            s.get("kind") in ("summarize", "merge")
            and "level" in s
            or s.get("kind") == "compress"
            and "level" in s
        ),
        hier_section,
    ),
    (
        "incremental",
        lambda s: s.get("kind") == "update" or s.get("kind") == "compress" and "level" not in s,
        incremental_section,
    ),
    ("summit", lambda s: s.get("kind") in ("draft", "iteration", "stop"), summit_section),
)


def trace_sections(trace: Any, summary: str = "") -> list[Section]:
    """The trace as sections: each strategy's own view of the steps it knows, then the rest.

    The rest are listed generically. A view that cannot be drawn (a malformed step) falls
    back to the generic listing of its steps with the reason, never an error.
    """
    steps = [s for s in trace if isinstance(s, dict)] if isinstance(trace, list) else []
    sections, rest = [], list(steps)
    for name, owns, build in _BUILDERS:
        mine = [s for s in rest if owns(s)]
        if not mine:
            continue
        try:
            sections.append(build(mine))
        except Exception as err:  # noqa: BLE001 - a view bug must not hide the steps
            sections.append(
                Section(
                    "steps",
                    f"{name} steps (view failed: {type(err).__name__}: {err})",
                    steps=[shown(s) for s in mine],
                )
            )
        rest = [s for s in rest if not owns(s)]
    if rest:
        sections.append(
            Section("steps", "Steps", steps=[shown(s, ("call_id",), summary) for s in rest])
        )
    return sections
