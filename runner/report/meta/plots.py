"""The meta-evaluation figure: each metric against the people's score, one point per summary.

One panel per (human score, metric) with data, drawn on its own ``Figure`` with the Agg
canvas as ``runner.report.plots`` does; the panel's title gives n, Kendall's tau and
Pearson's r, so the figure is readable without the table. A BooookScore axis (judge's or
people's; the metrics owning the annotations' formats) shows its whole 0..100 range plus a
margin, so a cloud near 100 is not stretched into a trend.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from runner.api.meta import kendall_tau, pearson_r

Points = Mapping[tuple[str, str], Sequence[tuple[float, float]]]
"""(human score name, metric) -> (human score, metric value) per summary."""
PLOT_FILE = "meta_vs_human.png"
_COLUMNS = 3


def _coefficient(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def meta_figure(
    points: Points,
    bounded: Collection[str] = (),
    ranges: Mapping[str, tuple[float, float]] | None = None,
) -> Figure | None:
    """The figure; None when no panel has a point.

    ``bounded``: the human scores whose axes show 0..100 (those of the metrics owning the
    annotations' formats, ``runner.human.owner``). ``ranges``: each metric's declared range
    (``Value.range``), which its axis shows whole.
    """
    panels = [(key, pts) for key, pts in sorted(points.items()) if pts]
    if not panels:
        return None
    columns = min(_COLUMNS, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure = Figure(figsize=(4.2 * columns, 3.8 * rows))
    for i, ((human, metric), pts) in enumerate(panels):
        axes = figure.add_subplot(rows, columns, i + 1)
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        axes.scatter(xs, ys, s=14, alpha=0.7, clip_on=False)
        axes.set_xlabel(human)
        axes.set_ylabel(metric)
        if human in bounded:
            axes.set_xlim(-5.0, 105.0)
        if metric in (ranges or {}):
            low, high = (ranges or {})[metric]
            pad = 0.05 * (high - low)
            axes.set_ylim(min(low, *ys) - pad, max(high, *ys) + pad)
        tau, r = _coefficient(kendall_tau(xs, ys)), _coefficient(pearson_r(xs, ys))
        axes.set_title(f"n={len(pts)}, tau={tau}, r={r}", fontsize=9)
        axes.grid(alpha=0.3)
    figure.suptitle("Metrics vs people, per summary")
    figure.tight_layout()
    return figure


def meta_plot(
    points: Points,
    path: Path,
    bounded: Collection[str] = (),
    ranges: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[Path | None, str]:
    """Write the figure to ``path``; (path, note), or (None, why it was skipped)."""
    figure = meta_figure(points, bounded, ranges)
    if figure is None:
        return None, f"skipped {path.name}: no judged run has a metric of a human-scored summary"
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=150, bbox_inches="tight")
    return path, f"wrote {path.name}"
