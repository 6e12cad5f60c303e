"""The estimate as printed: one line per cell, its roles beneath, the total, then the notes.

A figure that rests on a guess prints as a range, 'low–high' (``ranges.py``); an exact one
as one number. After the sources, one line per guess names the part of the range it drives.
"""

from __future__ import annotations

from runner.estimate.cell import CellEstimate
from runner.estimate.rates import rate_seconds
from runner.estimate.span import KEYS, Driver, Figures, Span

DASH = "–"
WIDTHS = {"calls": 11, "prompt_tokens": 13, "completion_tokens": 13, "cost_usd": 13, "wall_s": 13}
HEADER = f"{'cell':<40} {'docs':>4} {'calls':>11} {'prompt tok':>13} {'compl. tok':>13} "
HEADER += f"{'USD':>13} {'wall':>13}"
NAMES = {
    "calls": "calls",
    "prompt_tokens": "prompt tok",
    "completion_tokens": "compl. tok",
    "cost_usd": "USD",
    "wall_s": "wall",
}


AT_LEAST = "+?"
"""After a figure that leaves out the calls of a plugin without an ``estimate`` hook."""


def duration(seconds: float) -> str:
    """'42 s', '12 min', '3.4 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _one(key: str, value: float, short: bool) -> str:
    if key == "wall_s":
        return duration(value)
    if key == "cost_usd":
        return f"{value:,.2f}"
    if short and value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if short and value >= 1e4:
        return f"{value / 1e3:.0f}k"
    return f"{value:,.0f}"


def figure(key: str, span: Span) -> str:
    """One figure: a number when exact, else 'low–high'.

    Large token counts are shortened ('115k'); a range narrower than its shortened form
    prints as '~115k'.
    """
    low, high = span.low.get(key), span.high.get(key)
    if not span.moves(key):
        return _one(key, low, False)
    if _one(key, low, True) == _one(key, high, True):
        return f"~{_one(key, low, True)}"
    return f"{_one(key, low, True)}{DASH}{_one(key, high, True)}"


def _line(
    name: str, docs: str, span: Span, keys: tuple[str, ...] = KEYS, unknown: bool = False
) -> str:
    """One row; ``unknown``: some calls are not counted, so each figure is a lower bound."""
    label = name if len(name) <= 40 else name[:37] + "..."
    more = AT_LEAST if unknown else ""
    cells = " ".join(f"{figure(k, span) + more:>{WIDTHS[k]}}" for k in keys)
    return f"{label:<40} {docs:>4} {cells}"


def cell_lines(cell: CellEstimate) -> list[str]:
    """The cell's line and one per role."""
    if cell.done_run:
        return [f"{cell.name:<40} done: run {cell.done_run} is FINISHED, costs nothing"]
    out = [_line(cell.name, str(cell.documents), cell.range, unknown=bool(cell.unknown))]
    spans = cell.role_spans or tuple(Span.exact(r.figures) for r in cell.roles)
    for r, span in zip(cell.roles, spans, strict=True):
        unknown = r.role in cell.unknown_roles
        out.append(_line(f"  {r.role}={r.model}", "", span, KEYS[:-1], unknown=unknown))
    return out


def table(cells: list[CellEstimate], skipped: str, parallel: int = 1) -> str:
    """The whole estimate: cells, total, sources, what each guess drives, and notes.

    ``parallel``: jobs the launcher runs at once (the total wall time divides by it).
    """
    lines = [f"estimate (no run, no model call; checks skipped: {skipped})", HEADER]
    for cell in cells:
        lines += cell_lines(cell)
    todo = [c for c in cells if not c.done_run]
    total = _total(todo, parallel)
    count = f"total ({len(todo)} of {len(cells)} cells to run)"
    unknown = sorted({who for c in todo for who in c.unknown})
    lines.append(_line(count, str(sum(c.documents for c in todo)), total, unknown=bool(unknown)))
    if unknown:
        who = ", ".join(unknown)
        lines.append(f"{AT_LEAST}: at least this much; not counted: the calls of {who}")
    lines.append(
        ("wall: jobs one after another" if parallel <= 1 else f"wall: {parallel} jobs at once")
        + ", at least what the endpoints' shared rate limits (model.rpm, tpm) allow"
    )
    sources = sorted(
        {
            f"{r.model}: price {r.price_source}; seconds per call {r.latency_source}"
            for c in todo
            for r in c.roles
        }
    )
    lines += ["sources:", *[f"  {s}" for s in sources]]
    lines += _driver_lines(todo)
    notes = sorted({n for c in todo for n in c.notes} | _bounds())
    lines += ["notes:", *[f"  {n}" for n in notes]]
    return "\n".join(lines)


def _total(todo: list[CellEstimate], parallel: int) -> Span:
    """The cells' sum; wall at ``parallel`` jobs at once, never under the shared limits."""
    summed = sum((c.range for c in todo), Span.exact(Figures()))
    ends = []
    for end, limited in (
        (summed.low, _limited(todo, "low")),
        (summed.high, _limited(todo, "high")),
    ):
        wall = max(end.wall_s / max(1, parallel), limited)
        ends.append(
            Figures(end.calls, end.prompt_tokens, end.completion_tokens, end.cost_usd, wall)
        )
    return Span(ends[0], ends[1])


def _driver_lines(todo: list[CellEstimate]) -> list[str]:
    """One line per guess: what it rests on and the part of the range it drives alone."""
    texts: dict[str, str] = {}
    for cell in todo:
        for d in cell.drivers:
            texts.setdefault(d.key, d.text)
    if not texts:
        return []
    out = [
        "ranges (low: every guess at its cheap bound, high: at its dear bound; each guess "
        "alone, the others at their point values, drives):"
    ]
    for key, text in sorted(texts.items()):
        span = sum((_alone(c, key) for c in todo), Span.exact(Figures()))
        moved = [f"{NAMES[k]} {figure(k, span)}" for k in KEYS if span.moves(k)]
        out.append(f"  {key}: {text}: " + (", ".join(moved) or "moves no printed figure"))
    return out


def _alone(cell: CellEstimate, key: str) -> Span:
    """The span ``key`` drives in ``cell``; the cell's point figures when it does not use it."""
    found: list[Driver] = [d for d in cell.drivers if d.key == key]
    return found[0].span if found else Span.exact(cell.figures)


def _limited(cells: list[CellEstimate], end: str) -> float:
    """The least seconds the sweep's calls need at each endpoint's shared provider limits."""
    sums: dict[tuple[str, str], list[float]] = {}
    specs = {}
    for cell in cells:
        spans = cell.role_spans or tuple(Span.exact(r.figures) for r in cell.roles)
        for r, span in zip(cell.roles, spans, strict=True):
            at = span.low if end == "low" else span.high
            figures = sums.setdefault(r.spec.endpoint, [0.0, 0.0, 0.0])
            figures[0] += at.calls
            figures[1] += at.prompt_tokens
            figures[2] += at.completion_tokens
            specs[r.spec.endpoint] = r.spec
    return max([0.0, *[rate_seconds(specs[e], *figures) for e, figures in sums.items()]])


def _bounds() -> set[str]:
    """What every estimate leaves out, said once."""
    return {
        "exact (one number): documents, chunks (the real tokenizer), hier's levels, "
        "incremental's steps, BooookScore's sentences of given summaries; a range: what rests "
        "on answer lengths, a summary's sentences, SummIt's rounds, a job's own seconds",
        "not in the ranges: regenerations, re-asks and compressions beyond those measured in "
        "this store (none until measured): each can repeat a call up to its max_attempts",
        "cache: a cell whose identical run is FINISHED costs nothing, and so does each "
        "predictable request already cached (hier's level 0, incremental's first update, "
        "baseline, BooookScore over given summaries); the others are counted (an upper bound)",
    }
