"""A ``Table`` as Markdown (printed, and for notes), LaTeX (booktabs, for the paper) and CSV.

Markdown and LaTeX show ``mean [low, high]`` per cell: the interval is a percentile
bootstrap, so it need not be symmetric and a ``±`` would misstate one side. Both end with
the footnote of runs that were not averaged, so a copied table carries its caveats. The CSV is
long (one line per cell and metric) with full-precision numbers, for re-analysis.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence

from runner.report.runs import Excluded
from runner.report.table import Estimate, Key, Table

CSV_FIELDS = ("metric", "mean", "ci_low", "ci_high", "n", "runs")
_REASON_CHARS = 160  # a failure tag can hold a traceback: the footnote shows its first line


def readable(value: float) -> str:
    """One number for a reader: 0.0183, 0.500, 73.83, 1234.50, 12, 0, 1.23e-05.

    Whole numbers print whole; below 1 a value keeps 3 significant digits (a ratio of
    0.0183 printed with 2 decimals would read 0.02, a third too high); below 0.0001 it is
    written in scientific notation; larger values get 2 decimals.
    """
    if not math.isfinite(value):
        return str(value)  # nan, inf: what the value is, not a number that looks real
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    size = abs(value)
    if size < 1e-4:
        return f"{value:.2e}"
    if size < 1:
        return f"{value:.{_places_for_3_digits(size)}f}"
    return f"{value:.2f}"


def _places_for_3_digits(size: float) -> int:
    """Decimals that show 3 significant digits of ``0 < size < 1`` (0.0183 -> 4)."""
    return max(3, 2 - math.floor(math.log10(size)))


def decimals(table: Table, metric: str) -> int:
    """One precision per metric column, so a mean and its interval line up.

    From the column's largest mean: 0.612 (below 1: 3 significant digits, 0.0183), 5.43,
    78.1, 1204; a column whose means and bounds are all whole numbers (calls) prints none.
    """
    cells = [e for (_, _, m), e in table.cells.items() if m == metric]
    if cells and all(float(v).is_integer() for e in cells for v in (e.mean, e.low, e.high)):
        return 0
    largest = max((abs(e.mean) for e in cells), default=0.0)
    if largest < 1:
        return min(6, _places_for_3_digits(largest)) if largest > 0 else 3
    return 2 if largest < 10 else 1 if largest < 1000 else 0


def cell_text(estimate: Estimate | None, places: int) -> tuple[str, str]:
    """(mean, interval) as text; ('—', '') for an empty cell."""
    if estimate is None:
        return "—", ""
    return f"{estimate.mean:.{places}f}", f"[{estimate.low:.{places}f}, {estimate.high:.{places}f}]"


def _column_title(column: Key) -> str:
    return "/".join(column)


def _row_titles(table: Table) -> tuple[list[str], list[Key]]:
    """Header and values of the label columns ('configuration: all' when no key varies)."""
    if table.layout.rows:
        return list(table.layout.rows), list(table.rows)
    return ["configuration"], [("all",) for _ in table.rows]


def caption(table: Table) -> str:
    """What a cell is, in one sentence."""
    counts = [e.n for e in table.cells.values()] or [0]
    n = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"
    text = (
        f"Cells: mean [{table.confidence:.0%} CI] over documents, pooled over the runs of a cell "
        f"(percentile bootstrap, {table.resamples} resamples, seed {table.seed}); "
        f"n = {n} per cell."
    )
    if table.per_run:
        text += f" One value per run (no per-document values): {', '.join(sorted(table.per_run))}."
    return text + _sampled(table)


def _sampled(table: Table) -> str:
    """What the caption says of cells whose judge was sampled.

    How their interval was drawn, the variance split of each, and which cells were judged once.
    """
    sampled = {k: e for k, e in table.cells.items() if e.samples}
    if not sampled:
        return ""
    split = "; ".join(
        f"{table.title(metric)} {' '.join((*row, *column))}: between documents "
        f"{readable(e.between)}"
        + ("" if math.isnan(e.members) else f", between panel members {readable(e.members)}")
        + ("" if math.isnan(e.within) else f", between a judge's samples {readable(e.within)}")
        + f" ({e.samples} judgments per document"
        + "".join(f", alpha among {among} {value:.2f}" for among, value in e.agreement)
        + ")"
        for (row, column, metric), e in sorted(sampled.items())
    )
    clustered = sorted({table.title(m) for (_, _, m), e in sampled.items() if e.clustered})
    pooled = sorted({table.title(m) for (_, _, m), e in sampled.items() if not e.clustered})
    text = " Cells whose judge was sampled (judge.samples) or a panel (judges=):"
    if clustered:
        text += (
            f" {', '.join(clustered)} resample documents and, within each, its judgments "
            "(cluster bootstrap);"
        )
    if pooled:
        text += (
            f" {', '.join(pooled)} resample the documents' pooled values (a label's majority, "
            "a panel's pool of its members), the quantity the point is;"
        )
    text += f" variance split: {split}."
    once = sorted({table.title(m) for (_, _, m), e in table.cells.items() if not e.samples})
    if once:
        text += f" Judged once (documents resampled only): {', '.join(once)}."
    return text


def footnote_lines(excluded: Sequence[Excluded]) -> list[str]:
    """One line per run left out: name, short id, status and reason.

    A failure's reason is cut to its first line (a tag can hold a traceback); an older
    version's is shown whole, since it names everything that changed.
    """
    lines = []
    for run in excluded:
        reason = (run.reason.strip().splitlines() or [""])[0]
        reason = reason if run.changed else reason[:_REASON_CHARS]
        lines.append(
            f"{run.run_name} ({run.run_id[:8]}): {run.status}" + (f": {reason}" if reason else "")
        )
    return lines


def markdown(table: Table, excluded: Sequence[Excluded]) -> str:
    """A GitHub-flavoured Markdown table, its caption and the footnote."""
    titles, labels = _row_titles(table)
    header = list(titles)
    for column in table.columns:
        prefix = f"{_column_title(column)}: " if table.layout.columns else ""
        header += [prefix + table.title(m) for m in table.metrics]
    places = {m: decimals(table, m) for m in table.metrics}
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(titles) + "--:|" * (len(header) - len(titles)),
    ]
    for row, label in zip(table.rows, labels, strict=True):
        cells = [
            " ".join(cell_text(table.cell(row, c, m), places[m])).strip()
            for c in table.columns
            for m in table.metrics
        ]
        lines.append("| " + " | ".join([*label, *cells]) + " |")
    lines += ["", caption(table)]
    if excluded:
        lines += ["", f"Not averaged ({len(excluded)} runs):"]
        lines += [f"- {line}" for line in footnote_lines(excluded)]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = re.compile(r"([\\&%$#_{}~^])")
_LATEX_REPLACE = {"\\": r"\textbackslash{}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table cell."""
    return _LATEX_SPECIAL.sub(lambda m: _LATEX_REPLACE.get(m.group(1), "\\" + m.group(1)), text)


def latex(table: Table, excluded: Sequence[Excluded]) -> str:
    r"""A booktabs ``table`` (needs ``\usepackage{booktabs}``): a column group per column value."""
    titles, labels = _row_titles(table)
    width = len(table.metrics)
    spec = "l" * len(titles) + " ".join(["r" * width] * len(table.columns))
    places = {m: decimals(table, m) for m in table.metrics}
    out = [
        "% Generated by python -m runner.report; needs \\usepackage{booktabs}.",
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
    ]
    if table.layout.columns:
        groups, rules = [], []
        for i, column in enumerate(table.columns):
            first = len(titles) + i * width + 1
            groups.append(f"\\multicolumn{{{width}}}{{c}}{{{latex_escape(_column_title(column))}}}")
            rules.append(f"\\cmidrule(lr){{{first}-{first + width - 1}}}")
        out += [" & " * len(titles) + " & ".join(groups) + " \\\\", " ".join(rules)]
    names = [latex_escape(t) for t in titles]
    names += [latex_escape(table.title(m)) for _ in table.columns for m in table.metrics]
    out += [" & ".join(names) + " \\\\", "\\midrule"]
    for row, label in zip(table.rows, labels, strict=True):
        cells = []
        for column in table.columns:
            for m in table.metrics:
                mean, interval = cell_text(table.cell(row, column, m), places[m])
                cells.append(mean + (f" {{\\scriptsize {interval}}}" if interval else ""))
        out.append(" & ".join([*(latex_escape(v) for v in label), *cells]) + " \\\\")
    out += [
        "\\bottomrule",
        "\\end{tabular}",
        f"\\caption{{{latex_escape(caption(table)).replace('–', '--')}}}",
    ]
    if excluded:
        listed = "; ".join(latex_escape(line) for line in footnote_lines(excluded))
        out += ["\\par\\smallskip", f"{{\\footnotesize Not averaged: {listed}.}}"]
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


def csv_text(table: Table) -> str:
    """One line per (row, column, metric) cell that has observations; numbers at full precision."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*table.layout.rows, *table.layout.columns, *CSV_FIELDS])
    for row in table.rows:
        for column in table.columns:
            for metric in table.metrics:
                e = table.cell(row, column, metric)
                if e is not None:
                    writer.writerow(
                        [
                            *row,
                            *column,
                            metric,
                            repr(e.mean),
                            repr(e.low),
                            repr(e.high),
                            e.n,
                            e.runs,
                        ]
                    )
    return buffer.getvalue()
