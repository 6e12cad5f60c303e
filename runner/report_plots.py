"""The report's figures as PNG files: the BooookScore paper's Figures 3 and 4, and SummIt's curve.

Each figure is drawn on its own ``Figure`` with the Agg canvas, never through pyplot's
global figure stack, so nothing needs a display and nothing leaks between reports. A figure
whose data the runs do not have is skipped with a note saying what is missing: a report of
``metrics=stats`` runs has no BooookScore to plot, and that is not an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from metrics.booookscore import type_key
from metrics.booookscore_parse import LABELS
from runner.report_runs import Layout, param
from runner.report_table import Key, Table, natural
from runner.results import RunRecord

SCORE = "booookscore/score"
LENGTH = "stats/length_tokens"
TYPE_METRICS = tuple(f"booookscore/{type_key(label)}" for label in LABELS)
"""Per-type error rates (% of judged sentences), in the paper's order."""
SUMMIT_SERIES = "strategy/score"
"""SummIt's evaluator score, logged once per iteration as the metric's steps."""
History = Sequence[tuple[int, float]]
"""(step, value) points of one run's metric."""


@dataclass(frozen=True)
class Plot:
    """What became of one figure."""

    path: Path | None
    """The PNG written, or None when skipped."""
    note: str
    """'wrote ...' or 'skipped ...: <what is missing>'."""


def label(row: Key, column: Key) -> str:
    """A configuration's short name: its column then its row values."""
    return " / ".join([*column, *row]) or "all"


def _save(figure: Figure, path: Path) -> Plot:
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=150, bbox_inches="tight")
    return Plot(path, f"wrote {path.name}")


def score_vs_length(table: Table, path: Path) -> Plot:
    """Figure 3: one point per configuration at (mean length, mean BooookScore), with CIs."""
    figure = Figure(figsize=(6.4, 4.8))
    axes = figure.add_subplot()
    drawn = 0
    for column in table.columns:
        points = [
            (row, length, score)
            for row in table.rows
            if (length := table.cell(row, column, LENGTH))
            and (score := table.cell(row, column, SCORE))
        ]
        if not points:
            continue
        drawn += len(points)
        xs, ys = [p[1].mean for p in points], [p[2].mean for p in points]
        axes.errorbar(
            xs,
            ys,
            xerr=[[p[1].mean - p[1].low for p in points], [p[1].high - p[1].mean for p in points]],
            yerr=[[p[2].mean - p[2].low for p in points], [p[2].high - p[2].mean for p in points]],
            fmt="o",
            capsize=3,
            label="/".join(column) or None,
        )
        for (row, _, _), x, y in zip(points, xs, ys, strict=True):
            text = ", ".join(row) or "all"
            axes.annotate(text, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    if not drawn:
        return Plot(None, f"skipped {path.name}: no run has both {SCORE} and {LENGTH}")
    axes.set_xlabel("summary length (tokens, mean over documents)")
    axes.set_ylabel("BooookScore (mean over documents)")
    axes.set_title("BooookScore vs summary length")
    if table.layout.columns:
        axes.legend(title="/".join(table.layout.columns), fontsize=8)
    axes.grid(alpha=0.3)
    return _save(figure, path)


def error_types(table: Table, path: Path) -> Plot:
    """Figure 4: per column value (strategy) a panel of grouped bars, one per error type."""
    present = [m for m in TYPE_METRICS if any(k[2] == m for k in table.cells)]
    if not present:
        return Plot(None, f"skipped {path.name}: no run has booookscore/type/<label> metrics")
    figure = Figure(figsize=(max(6.4, 1.1 * len(present)), 3.4 * len(table.columns)))
    width = 0.8 / max(1, len(table.rows))
    for i, column in enumerate(table.columns):
        axes = figure.add_subplot(len(table.columns), 1, i + 1)
        for j, row in enumerate(table.rows):
            offset = (j - (len(table.rows) - 1) / 2) * width
            bars = [
                (k + offset, cell.mean)
                for k, m in enumerate(present)
                if (cell := table.cell(row, column, m))
            ]  # no bar, not a zero, when absent
            if bars:
                xs, heights = zip(*bars, strict=True)
                axes.bar(xs, heights, width=width, label=", ".join(row) or "all")
        axes.set_xticks(range(len(present)))
        axes.set_xlim(-0.5, len(present) - 0.5)  # every type keeps its slot, drawn or not
        axes.set_xticklabels(
            [m.rsplit("/", 1)[1].replace("_", " ") for m in present], rotation=20, fontsize=8
        )
        axes.set_ylabel("% of judged sentences")
        axes.set_title("/".join(column) or "error types", fontsize=10)
        if table.layout.rows:
            axes.legend(title=", ".join(table.layout.rows), fontsize=7)
    figure.suptitle("Error types per strategy")
    figure.tight_layout()
    return _save(figure, path)


def summit_curves(
    runs: Sequence[RunRecord], layout: Layout, histories: Mapping[str, History], path: Path
) -> Plot:
    """SummIt's evaluator score per iteration, one line per configuration.

    A line is the mean over the configuration's runs at each step; each run's step value is
    already the mean over its documents that reached that iteration.
    """
    by_config: dict[tuple[Key, Key], dict[int, list[float]]] = {}
    for run in runs:
        points = histories.get(run.run_id) or ()
        key = (
            tuple(param(run, k) for k in layout.rows),
            tuple(param(run, k) for k in layout.columns),
        )
        for step, value in points:
            by_config.setdefault(key, {}).setdefault(step, []).append(value)
    if not by_config:
        return Plot(
            None, f"skipped {path.name}: no run has the {SUMMIT_SERIES} series (strategy=summit)"
        )
    figure = Figure(figsize=(6.4, 4.2))
    axes = figure.add_subplot()
    for (row, column), steps in sorted(
        by_config.items(), key=lambda kv: (natural(kv[0][1]), natural(kv[0][0]))
    ):
        xs = sorted(steps)
        axes.plot(
            [x + 1 for x in xs],
            [sum(steps[x]) / len(steps[x]) for x in xs],
            marker="o",
            label=label(row, column),
        )
    axes.set_xlabel("iteration")
    axes.set_ylabel(f"evaluator score ({SUMMIT_SERIES})")
    axes.set_title("SummIt: score per iteration")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    return _save(figure, path)
