"""The estimate as printed: one line per cell, its roles beneath, the total, then the notes.

A figure that rests on a guess prints as a range, 'low–high' (``ranges.py``); an exact one
as one number. After the sources, one line per guess names the part of the range it drives.

The cost prints twice, side by side: every call at its online price ('online USD'), and every
role that can batch at its batch price, the others online ('batch USD'; a role that cannot
batch shows '–' there). A role sent in batches (``<role>.batch=true``) is marked '[batch]';
when a cell batches some roles and not others that could, what it pays as configured is a
third figure, printed beneath it. The wall time is what the job would take as configured:
a batched role's rounds at the batch wait, never its online latency.
"""

from __future__ import annotations

from dataclasses import replace

from runner.estimate.cell import WAIT_WORDS, CellEstimate, RoleFigures
from runner.estimate.rates import rate_seconds
from runner.estimate.span import COLUMNS, Driver, Figures, Span

DASH = "–"
WIDTHS = {
    "calls": 11,
    "prompt_tokens": 13,
    "completion_tokens": 13,
    "online_usd": 13,
    "batch_usd": 13,
    "wall_s": 13,
}
NAMES = {
    "calls": "calls",
    "prompt_tokens": "prompt tok",
    "completion_tokens": "compl. tok",
    "cost_usd": "USD",
    "online_usd": "online USD",
    "batch_usd": "batch USD",
    "wall_s": "wall",
}
HEADER = f"{'cell':<40} {'docs':>4} " + " ".join(f"{NAMES[k]:>{WIDTHS[k]}}" for k in COLUMNS)
BATCH_TAG = " [batch]"
"""After a role sent in provider batches (``<role>.batch=true``)."""
NO_BATCH = DASH
"""In the batch column of a role that cannot batch."""


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
    if key.endswith("usd"):
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
    name: str,
    docs: str,
    span: Span,
    keys: tuple[str, ...] = COLUMNS,
    unknown: bool = False,
    blank: tuple[str, ...] = (),
) -> str:
    """One row.

    ``unknown``: some calls are not counted, so each figure is a lower bound; ``blank``: the
    columns that do not apply to the row ('–').
    """
    label = name if len(name) <= 40 else name[:37] + "..."
    more = AT_LEAST if unknown else ""
    cells = " ".join(
        f"{NO_BATCH if k in blank else figure(k, span) + more:>{WIDTHS[k]}}" for k in keys
    )
    return f"{label:<40} {docs:>4} {cells}"


def cell_lines(cell: CellEstimate) -> list[str]:
    """The cell's line, one per role, and what it pays as configured when that is a mix."""
    if cell.done_run:
        return [f"{cell.name:<40} done: run {cell.done_run} is FINISHED, costs nothing"]
    out = [_line(cell.name, str(cell.documents), cell.range, unknown=bool(cell.unknown))]
    spans = cell.role_spans or tuple(Span.exact(r.figures) for r in cell.roles)
    for r, span in zip(cell.roles, spans, strict=True):
        unknown = r.role in cell.unknown_roles
        name = f"  {r.role}={r.model}" + (BATCH_TAG if r.spec.batch else "")
        blank = () if r.can_batch else ("batch_usd",)
        out.append(_line(name, "", span, COLUMNS[:-1], unknown=unknown, blank=blank))
    if cell.mixed:
        out.append(f"  {_as_configured(cell, cell.range)}")
    return out


def _as_configured(cell: CellEstimate, span: Span) -> str:
    """'as configured (judge in batches, the others online): USD 3.10–4.20'."""
    batched = ", ".join(r.role for r in cell.roles if r.spec.batch)
    return (
        f"as configured ({batched} in batches, the others online): USD "
        f"{figure('cost_usd', span)}{AT_LEAST if cell.unknown else ''}"
    )


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
    if any(c.mixed for c in todo):
        lines.append(f"  total as configured: USD {figure('cost_usd', total)}")
    if unknown:
        who = ", ".join(unknown)
        lines.append(f"{AT_LEAST}: at least this much; not counted: the calls of {who}")
    lines.append(
        ("wall: jobs one after another" if parallel <= 1 else f"wall: {parallel} jobs at once")
        + ", at least what the endpoints' shared rate limits (model.rpm, tpm) allow"
    )
    lines.append(_batch_line(todo))
    sources = sorted({_source(r) for c in todo for r in c.roles})
    lines += ["sources:", *[f"  {s}" for s in sources]]
    lines += _driver_lines(todo)
    notes = sorted({n for c in todo for n in c.notes} | _bounds())
    lines += ["notes:", *[f"  {n}" for n in notes]]
    return "\n".join(lines)


def _batch_line(todo: list[CellEstimate]) -> str:
    """What the batch column means, and the wait of the roles sent in batches."""
    line = (
        "batch USD: each role that can batch (an Anthropic or OpenAI batch API, and its "
        "plugins let its requests wait) at its batch price, the others online; "
        f"{NO_BATCH}: cannot batch"
    )
    if any(c.batch_rounds for c in todo):
        line += (
            f"; wall of a role marked{BATCH_TAG}: {WAIT_WORDS} it waits (the notes count "
            "its rounds), not its online seconds per call"
        )
    return line


def _source(role: RoleFigures) -> str:
    """Where a role's prices and seconds per call come from."""
    batch = f"; batch price {role.batch_source}" if role.batch_source else ""
    return f"{role.model}: price {role.price_source}{batch}; seconds per call {role.latency_source}"


def _total(todo: list[CellEstimate], parallel: int) -> Span:
    """The cells' sum; wall at ``parallel`` jobs at once, never under the shared limits."""
    summed = sum((c.range for c in todo), Span.exact(Figures()))
    ends = []
    for end, limited in (
        (summed.low, _limited(todo, "low")),
        (summed.high, _limited(todo, "high")),
    ):
        ends.append(replace(end, wall_s=max(end.wall_s / max(1, parallel), limited)))
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
        moved = [f"{NAMES[k]} {figure(k, span)}" for k in COLUMNS if span.moves(k)]
        out.append(f"  {key}: {text}: " + (", ".join(moved) or "moves no printed figure"))
    return out


def _alone(cell: CellEstimate, key: str) -> Span:
    """The span ``key`` drives in ``cell``; the cell's point figures when it does not use it."""
    found: list[Driver] = [d for d in cell.drivers if d.key == key]
    return found[0].span if found else Span.exact(cell.figures)


def _limited(cells: list[CellEstimate], end: str) -> float:
    """The least seconds the sweep's online calls need at each endpoint's shared limits.

    A batched role's calls are not sent online.
    """
    sums: dict[tuple[str, str], list[float]] = {}
    specs = {}
    for cell in cells:
        spans = cell.role_spans or tuple(Span.exact(r.figures) for r in cell.roles)
        for r, span in zip(cell.roles, spans, strict=True):
            if r.spec.batch:
                continue
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
