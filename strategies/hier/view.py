"""How hier's trace is drawn in the summary viewer: the merge tree by level.

Level-0 chunk summaries are the leaves, each merge a node over the children it packed, a
compression by the oversize guard a step inside the child it shortened. Steps are read with
``.get``: the trace is a record of what happened. The shapes are ``runner.api.trace_view``'s.
"""

from __future__ import annotations

from dataclasses import replace

from runner.api import Listed, Node, Section, Step, picked

_MERGE_FACTS = ("output_tokens", "budget", "prompt_tokens", "context_tokens", "attempts")
_LEAF_FACTS = ("output_tokens", "budget", "chunk_tokens", "prompt_tokens", "attempts")
_FALLBACK = "cut by the fallback"


def owns(step: Step) -> bool:
    """A step of hier's tree: a chunk summary, a merge or a compression, each with a level."""
    return step.get("kind") in ("summarize", "merge", "compress") and "level" in step


def _node(step: Step, children: list[Node]) -> Node:
    level = int(step.get("level") or 0)
    if step.get("kind") == "merge":
        kids = step.get("children") or []
        span = f"{kids[0] + 1}–{kids[-1] + 1}" if len(kids) > 1 else _text(kids)
        title = f"Level {level} · merge {int(step.get('index', 0)) + 1} of summaries {span}"
        facts = picked(step, *_MERGE_FACTS, "word_limits")
    else:
        chunk = step["chunk"] if "chunk" in step else step.get("index", 0)
        title = f"Level 0 · chunk {int(chunk) + 1}"
        facts = picked(step, *_LEAF_FACTS, "word_limits")
    tokens = f"{step['output_tokens']} tokens" if "output_tokens" in step else ""
    return Node(
        title,
        str(step.get("text", "")),
        level,
        tokens,
        facts,
        warnings=(_FALLBACK,) if step.get("fallback") else (),
        children=tuple(children),
    )


def _text(value: object) -> str:
    return "—" if value is None else str(value)


def trace_view(steps: list[Step]) -> list[Section]:
    """The merge tree, and per level how many summaries the fallback cut; [] without a tree."""
    mine = [i for i, s in enumerate(steps) if owns(s)]
    if not mine:
        return []
    at = {i: steps[i] for i in mine}
    leaves = sorted(
        (i for i in mine if at[i].get("kind") == "summarize"),
        key=lambda i: int(at[i].get("index", 0)),
    )
    merges = [i for i in mine if at[i].get("kind") == "merge"]
    guarded = [i for i in mine if at[i].get("kind") == "compress"]
    below = [_node(at[i], []) for i in leaves]
    cut = [[bool(at[i].get("fallback")) for i in leaves]]
    for level in sorted({int(at[m].get("level", 1)) for m in merges}):
        for c in (c for c in guarded if int(at[c].get("level", -1)) == level):
            child = int(at[c].get("child", -1))
            if 0 <= child < len(below):
                below[child] = replace(
                    below[child],
                    badges=("compressed before merging",),
                    steps=(Listed(c, hide=("call_id", "call_ids", "child")),),
                )
        here = sorted(
            (m for m in merges if int(at[m].get("level", 1)) == level),
            key=lambda m: int(at[m].get("index", 0)),
        )
        below = [
            _node(at[m], [below[i] for i in at[m].get("children") or [] if 0 <= i < len(below)])
            for m in here
        ]
        cut.append([bool(at[m].get("fallback")) for m in here])
    facts = {
        f"level {i}": f"{len(level)} summaries, {sum(level)} cut by the fallback"
        for i, level in enumerate(cut)
    }
    top = (
        below[0]
        if len(below) == 1
        else Node("(no single top summary)", level=len(cut), children=tuple(below))
    )
    return [Section("hier", "Hierarchical merging: the merge tree", tuple(mine), facts, tree=top)]
