"""The report's figures as PNG files: the BooookScore paper's Figures 3 and 4, and SummIt's curve.

Each figure is drawn on its own ``Figure`` with the Agg canvas, never through pyplot's
global figure stack, so nothing needs a display and nothing leaks between reports. A figure
whose data the runs do not have is skipped with a note saying what is missing: a report of
``metrics=stats`` runs has no BooookScore to plot, and that is not an error.

Axes are set from what the numbers can be, not left to matplotlib's autoscale, which pads a
0-100 score past 100 and turns a single value v into v ± 5% with ticks like 0.945..1.050:
a reader of the folder would take those for data. BooookScore stays within 0..100, SummIt's
score axis covers its 1-5 scale, iterations are whole numbers, and a panel of error types
with no sentence flagged says so in words instead of drawing an empty axis around zero.
Each ``*_figure`` function returns the ``Figure`` (None: nothing to draw) so that tests can
check what is drawn; the functions named after the files save it or note the skip. Point
labels that would print over each other (configurations on one spot) are moved apart, each
measured as the renderer draws it (``place_labels``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Bbox

from runner.api.value import Value
from runner.plugins import categories
from runner.report.layout import Layout, param
from runner.report.table import Key, Table, natural
from runner.tracking.reader import RunRecord

Kinds = tuple[tuple[str, tuple[str, ...]], ...]
"""The error-type figure's bars: (display label, the metric names of its rate in the runs)."""
NO_FLAG = "no sentence flagged"
"""Written in an error-type panel whose every rate is zero."""
History = Sequence[tuple[int, float]]
"""(step, value) points of one run's metric."""
Histories = Mapping[str, Mapping[str, History]]
"""run id -> series name -> its points."""


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


def _save(figure: Figure | None, path: Path, missing: str) -> Plot:
    """Write ``figure`` as a PNG, or note that it was skipped because of ``missing``."""
    if figure is None:
        return Plot(None, f"skipped {path.name}: {missing}")
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=150, bbox_inches="tight")
    return Plot(path, f"wrote {path.name}")


def score_vs_length(table: Table, path: Path, x: str, y: str) -> Plot:
    """Figure 3 as ``path`` (see ``score_vs_length_figure``): ``y`` against ``x``."""
    return _save(score_vs_length_figure(table, x, y), path, f"no run has both {y} and {x}")


def score_vs_length_figure(table: Table, x: str, y: str) -> Figure | None:
    """Figure 3: one point per configuration at (mean ``x``, mean ``y``), with CIs.

    ``x`` and ``y``: the report's ``scatter`` (the paper's length and BooookScore); their
    titles and ``y``'s range are what the runs' plugins declare.
    """
    figure = Figure(figsize=(6.4, 4.8))
    axes = figure.add_subplot()
    lows: list[float] = []
    highs: list[float] = []
    labels: list[Label] = []
    for column in table.columns:
        points = [
            (row, length, score)
            for row in table.rows
            if (length := table.cell(row, column, x)) and (score := table.cell(row, column, y))
        ]
        if not points:
            continue
        lows += [p[2].low for p in points]
        highs += [p[2].high for p in points]
        xs, ys = [p[1].mean for p in points], [p[2].mean for p in points]
        drawn = axes.errorbar(
            xs,
            ys,
            xerr=[[p[1].mean - p[1].low for p in points], [p[1].high - p[1].mean for p in points]],
            yerr=[[p[2].mean - p[2].low for p in points], [p[2].high - p[2].mean for p in points]],
            fmt="o",
            capsize=3,
            clip_on=False,  # a point at 100 sits on the top edge: draw it whole
            label="/".join(column) or None,
        )
        color = to_hex(drawn.lines[0].get_color())  # a label in its point's colour: its column
        named = zip(points, xs, ys, strict=True)
        labels += [Label(", ".join(row) or "all", at, up, color) for (row, _, _), at, up in named]
    if not lows:
        return None
    title = table.title(y)
    axes.set_ylim(*score_limits(lows, highs, _range(table.facts, y)))
    place_labels(axes, labels)
    axes.set_xlabel(f"{table.title(x)}, mean over documents")
    axes.set_ylabel(f"{title}, mean over documents")
    axes.set_title(f"{title} vs {table.title(x)}", pad=12)  # labels of points at 100 sit above
    if table.layout.columns:
        axes.legend(title="/".join(table.layout.columns), fontsize=8)
    axes.grid(alpha=0.3)
    return figure


@dataclass(frozen=True)
class Label:
    """A point's name on a scatter figure."""

    text: str
    """The configuration's row values ('claude', 'gpt4, 2048')."""
    x: float
    """The point, in data coordinates."""
    y: float
    """The point, in data coordinates."""
    color: str
    """Its series' colour, so equal names of two columns stay apart."""


def place_labels(axes: Axes, labels: Sequence[Label]) -> None:
    """Name each point beside it, moving a label down or up until it overlaps no other.

    Configurations often land on one spot (two models with the same BooookScore and length,
    a repeat): labels drawn at one offset would print over each other. Each label is
    measured with the renderer once the axes' limits are set (so call this after them); one
    that would touch a label already placed moves a line at a time (below, above, then
    further), with a thin line back to its point when it moved; a label takes its point's
    colour, and a white backing keeps it readable over error bars.
    """
    if not labels:
        return
    figure = axes.get_figure()
    assert isinstance(figure, Figure)
    renderer = FigureCanvasAgg(figure).get_renderer()  # type: ignore[no-untyped-call]
    axes.autoscale_view()
    placed: list[Bbox] = []
    shifts = _shifts(_MAX_SHIFTS)
    for label in sorted(labels, key=lambda item: (-item.y, item.x, item.text)):
        for k in shifts:
            note = _label_at(axes, label, 4.0 - k * _LINE, moved=False)
            box = text_box(note, renderer).padded(1.0)  # and its white backing
            if k == shifts[-1] or not any(box.overlaps(other) for other in placed):
                placed.append(box)
                if k:  # drawn again with its line back to the point
                    note.remove()
                    _label_at(axes, label, 4.0 - k * _LINE, moved=True)
                break
            note.remove()


def _label_at(axes: Axes, label: Label, rise: float, *, moved: bool) -> Annotation:
    """A point's label, ``rise`` points above it (and 5 to its right)."""
    line = {"arrowstyle": "-", "lw": 0.5, "color": label.color, "alpha": 0.6} if moved else None
    return axes.annotate(
        label.text,
        (label.x, label.y),
        textcoords="offset points",
        xytext=(5, rise),
        fontsize=8,
        color=label.color,
        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75},
        arrowprops=line,
    )


_LINE = 8 * 1.3
"""Points one label moves per step: a line of the labels' 8-point font, with a gap."""
_MAX_SHIFTS = 40
"""Lines a label may move before it is drawn where it is (a crowd of 40 points on one spot)."""


def text_box(note: Annotation, renderer: RendererBase) -> Bbox:
    """The display extent of an annotation's text alone (its line back to the point left out)."""
    note.update_positions(renderer)
    return Text.get_window_extent(note, renderer)


def _shifts(limit: int) -> list[int]:
    """Line offsets to try, nearest first: 0, 1 (below), -1 (above), 2, -2, ..."""
    return [0, *(sign * n for n in range(1, limit // 2 + 1) for sign in (1, -1))]


def score_limits(
    lows: Sequence[float], highs: Sequence[float], bounds: tuple[float, float] | None
) -> tuple[float, float]:
    """The score axis: every interval with a margin of at least 5 points.

    Within ``bounds``, the score's declared range (``Value.range``), when it has one.
    """
    low, high = min(lows), max(highs)
    margin = max(0.05 * (high - low), 5.0)
    if bounds is None:
        return low - margin, high + margin
    return max(bounds[0], low - margin), min(bounds[1], high + margin)


def _range(facts: Mapping[str, Value], key: str) -> tuple[float, float] | None:
    found = facts.get(key)
    return found.range if found is not None else None


def series_names(facts: Mapping[str, Value]) -> list[str]:
    """The values the runs' plugins declare as series (``Value(series=True)``), in order."""
    return [key for key, value in facts.items() if value.series]


def error_kinds(runs: Sequence[RunRecord]) -> Kinds:
    """The error types the runs' metrics recorded (``runner.plugins.categories``), in order.

    A type's rate is ``<metric label>/<value key>``: runs that gave the metric other labels
    name it differently, so each type lists every name it has in the runs.
    """
    names: dict[str, list[str]] = {}
    for run in runs:
        for metric, pairs in categories.recorded(run.tags, run.params, run.metrics).items():
            for label, key in pairs:
                found = names.setdefault(label, [])
                if f"{metric}/{key}" not in found:
                    found.append(f"{metric}/{key}")
    return tuple((label, tuple(found)) for label, found in names.items())


def error_types(table: Table, kinds: Kinds, path: Path) -> Plot:
    """Figure 4 as ``path`` (see ``error_types_figure``)."""
    missing = "no run has the rates of an error type its metrics recorded"
    return _save(error_types_figure(table, kinds), path, missing)


def _rate_cells(table: Table, kinds: Kinds) -> dict[str, str]:
    """Display label -> the metric name of its rate in ``table`` (a type without one: left out)."""
    present = {k[2] for k in table.cells}
    out = {}
    for label, names in kinds:
        found = next((m for m in names if m in present), None)
        if found is not None:
            out[label] = found
    return out


def error_types_figure(table: Table, kinds: Kinds) -> Figure | None:
    """Figure 4: per column value (strategy) a panel of grouped bars, one per error type."""
    shown = _rate_cells(table, kinds)
    present = list(shown.values())
    if not present:
        return None
    figure = Figure(figsize=(max(6.4, 1.1 * len(present)), 3.4 * len(table.columns)))
    for i, column in enumerate(table.columns):
        axes = figure.add_subplot(len(table.columns), 1, i + 1)
        _error_panel(axes, table, column, present)
        axes.set_xticks(range(len(present)))
        axes.set_xlim(-0.5, len(present) - 0.5)  # every type keeps its slot, drawn or not
        axes.set_xticklabels(list(shown), rotation=20, fontsize=8)
        axes.set_title("/".join(column) or "error types", fontsize=10)
    figure.suptitle("Error types per strategy")
    figure.tight_layout()
    return figure


def _error_panel(axes: Axes, table: Table, column: Key, present: Sequence[str]) -> None:
    """One column's bars; a panel with no bar above zero says so in words instead."""
    cells = {
        (row, m): cell
        for row in table.rows
        for m in present
        if (cell := table.cell(row, column, m))  # no bar, not a zero, when absent
    }
    if not any(cell.mean > 0 for cell in cells.values()):
        text = NO_FLAG if cells else "not judged (no error-type rates)"
        axes.text(0.5, 0.5, text, transform=axes.transAxes, ha="center", va="center")
        axes.set_ylim(0.0, 1.0)
        axes.set_yticks([])
        return
    width = 0.8 / max(1, len(table.rows))
    for j, row in enumerate(table.rows):
        offset = (j - (len(table.rows) - 1) / 2) * width
        found = [(k, m) for k, m in enumerate(present) if (row, m) in cells]
        bars = [(k + offset, cells[row, m].mean) for k, m in found]
        if bars:
            xs, heights = zip(*bars, strict=True)
            axes.bar(xs, heights, width=width, label=", ".join(row) or "all")
    axes.set_ylim(bottom=0.0)
    axes.set_ylabel("% of judged sentences")
    if table.layout.rows:
        axes.legend(title=", ".join(table.layout.rows), fontsize=7)


def series_curves(
    runs: Sequence[RunRecord],
    layout: Layout,
    histories: Histories,
    facts: Mapping[str, Value],
    path: Path,
) -> Plot:
    """The runs' series as ``path`` (see ``series_figure``)."""
    missing = (
        "no run logged a series (a value its strategy or metric declares with "
        "Value(series=True), such as a score per iteration)"
    )
    return _save(series_figure(runs, layout, histories, facts), path, missing)


def series_figure(
    runs: Sequence[RunRecord], layout: Layout, histories: Histories, facts: Mapping[str, Value]
) -> Figure | None:
    """Each declared series per iteration, one line per configuration, a panel per series.

    A line is the mean over the configuration's runs at each step; each run's step value is
    already the mean over its documents that reached that iteration. The value axis shows
    the series' whole declared range (``Value.range``).
    """
    names = [n for n in series_names(facts) if any(n in h for h in histories.values())]
    if not names:
        return None
    figure = Figure(figsize=(6.4, 4.2 * len(names)))
    for index, name in enumerate(names):
        by_config = _by_config(runs, layout, histories, name)
        _series_panel(figure.add_subplot(len(names), 1, index + 1), by_config, name, facts)
    return figure


def _by_config(
    runs: Sequence[RunRecord], layout: Layout, histories: Histories, name: str
) -> dict[tuple[Key, Key], dict[int, list[float]]]:
    by_config: dict[tuple[Key, Key], dict[int, list[float]]] = {}
    for run in runs:
        points = histories.get(run.run_id, {}).get(name) or ()
        key = (
            tuple(param(run, k) for k in layout.rows),
            tuple(param(run, k) for k in layout.columns),
        )
        for step, value in points:
            by_config.setdefault(key, {}).setdefault(step, []).append(value)
    return by_config


def _series_panel(
    axes: Axes,
    by_config: dict[tuple[Key, Key], dict[int, list[float]]],
    name: str,
    facts: Mapping[str, Value],
) -> None:
    ys: list[float] = []
    for (row, column), steps in sorted(
        by_config.items(), key=lambda kv: (natural(kv[0][1]), natural(kv[0][0]))
    ):
        xs = sorted(steps)
        means = [sum(steps[x]) / len(steps[x]) for x in xs]
        ys += means
        axes.plot([x + 1 for x in xs], means, marker="o", label=label(row, column))
    iterations = max(step for steps in by_config.values() for step in steps) + 1
    axes.set_xlim(0.5, iterations + 0.5)
    bounds = _range(facts, name) or (min(ys), max(ys))
    pad = 0.05 * (max(bounds[1], *ys) - min(bounds[0], *ys)) or 0.2
    axes.set_ylim(min(bounds[0], *ys) - pad, max(bounds[1], *ys) + pad)
    for axis in (axes.xaxis, axes.yaxis):  # min_n_ticks=1: one iteration is still tick 1 alone
        axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    title = facts[name].title if facts[name].title else name
    axes.set_xlabel("iteration")
    axes.set_ylabel(f"{title} ({name})" if title != name else name)
    axes.set_title(f"{title} per iteration")
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
