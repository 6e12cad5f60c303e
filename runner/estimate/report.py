"""The estimate as printed: one line per cell, its roles beneath, the total, then the notes."""

from __future__ import annotations

from runner.estimate.cell import CellEstimate
from runner.estimate.rates import rate_seconds

HEADER = f"{'cell':<40} {'docs':>4} {'calls':>7} {'prompt tok':>11} {'compl. tok':>10} "
HEADER += f"{'USD':>9} {'wall':>9}"


def duration(seconds: float) -> str:
    """'42 s', '12 min', '3.4 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _line(name: str, docs: str, calls: float, prompt: float, completion: float, usd: float) -> str:
    label = name if len(name) <= 40 else name[:37] + "..."
    return (
        f"{label:<40} {docs:>4} {calls:>7,.0f} {prompt:>11,.0f} {completion:>10,.0f} {usd:>9,.2f}"
    )


def cell_lines(cell: CellEstimate) -> list[str]:
    """The cell's line and one per role."""
    if cell.done_run:
        return [f"{cell.name:<40} done: run {cell.done_run} is FINISHED, costs nothing"]
    out = [
        _line(
            cell.name,
            str(cell.documents),
            cell.calls,
            cell.prompt_tokens,
            cell.completion_tokens,
            cell.cost_usd,
        )
        + f" {duration(cell.wall_s):>9}"
    ]
    for r in cell.roles:
        role = f"  {r.role}={r.model}"
        out.append(_line(role, "", r.calls, r.prompt_tokens, r.completion_tokens, r.cost_usd))
    return out


def table(cells: list[CellEstimate], skipped: str, parallel: int = 1) -> str:
    """The whole estimate: cells, total, sources and notes.

    ``parallel``: jobs the launcher runs at once (the total wall time divides by it).
    """
    lines = [f"estimate (no run, no model call; checks skipped: {skipped})", HEADER]
    for cell in cells:
        lines += cell_lines(cell)
    todo = [c for c in cells if not c.done_run]
    wall = max(sum(c.wall_s for c in todo) / max(1, parallel), _limited(todo))
    lines.append(
        _line(
            f"total ({len(todo)} of {len(cells)} cells to run)",
            str(sum(c.documents for c in todo)),
            sum(c.calls for c in todo),
            sum(c.prompt_tokens for c in todo),
            sum(c.completion_tokens for c in todo),
            sum(c.cost_usd for c in todo),
        )
        + f" {duration(wall):>9}"
    )
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
    notes = sorted({n for c in todo for n in c.notes} | _bounds())
    lines += ["notes:", *[f"  {n}" for n in notes]]
    return "\n".join(lines)


def _limited(cells: list[CellEstimate]) -> float:
    """The least seconds the sweep's calls need at each endpoint's shared provider limits."""
    sums: dict[tuple[str, str], list[float]] = {}
    specs = {}
    for cell in cells:
        for r in cell.roles:
            figures = sums.setdefault(r.spec.endpoint, [0.0, 0.0, 0.0])
            figures[0] += r.calls
            figures[1] += r.prompt_tokens
            figures[2] += r.completion_tokens
            specs[r.spec.endpoint] = r.spec
    return max([0.0, *[rate_seconds(specs[e], *figures) for e, figures in sums.items()]])


def _bounds() -> set[str]:
    """What every estimate leaves out, said once."""
    return {
        "exact: documents, chunks (the real tokenizer), hier's tree shape, incremental's "
        "steps, BooookScore's sentences of given summaries; expected: answer lengths, "
        "regenerations, re-asks and compressions (as measured in this store, else none)",
        "cache: a cell whose identical run is FINISHED costs nothing, and so does each "
        "predictable request already cached (hier's level 0, incremental's first update, "
        "baseline, BooookScore over given summaries); the others are counted (an upper bound)",
    }
