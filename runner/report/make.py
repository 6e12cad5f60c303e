"""``python -m runner.report``: the paper's Table 2 and figures from the MLflow runs of a sweep.

    python -m runner.report                                   # the latest sweep of 'summarization'
    python -m runner.report tracking.experiment=NAME sweep=PARENT_RUN_ID out=DIR
    python -m runner.report 'metric_keys=[booookscore/score,cost_usd]' 'rows=[model]'

It reads the runs back through ``runner.tracking.reader`` (FINISHED only, newest per fingerprint
and per cell; ``runner.report.runs``), estimates every cell with a bootstrap CI over documents
(``runner.report.table``), writes Markdown, LaTeX and CSV (``runner.report.format``) and the
figures (``runner.report.plots``) to ``out``, logs them to the sweep's parent run under
``report/``, and prints the Markdown. ``make_report`` does all of it from a ``ReportConfig``
without Hydra; ``main`` is the Hydra entry, the only place that sees a ``DictConfig``.

The list of metrics is ``metric_keys``, not ``metrics``: ``report.yaml`` lives beside the
runner's config groups, where ``metrics=`` already picks the runner's metric plugins. Left at
the paper's four, the table adds the headline metrics the runs recorded (their
``runner.headline`` tag), so a researcher's own metric shows without being named; a given
``metric_keys`` is the whole list.
Heavy imports (MLflow, pandas, matplotlib) wait until the config is valid, so ``--help`` and
config errors stay quick.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from omegaconf import DictConfig, OmegaConf

from runner.api.errors import DataError, RunnerError
from runner.config import hydra_errors as cli_errors
from runner.report.config import SETTINGS, ReportConfig, build_report_config
from runner.report.read import (
    histories,
    present_metrics,
    present_metrics_of,
    read_runs,
    recorded_headline,
)

if TYPE_CHECKING:
    from runner.report.plots import Plot
    from runner.report.runs import Layout, Selection
    from runner.report.table import Scores, Table
    from runner.tracking.reader import RunRecord


TABLE_FILES = {"md": "table.md", "tex": "table.tex", "csv": "table.csv"}
PLOT_FILES = ("score_vs_length.png", "error_types.png", "iterations.png")


@dataclass(frozen=True)
class Report:
    """What ``make_report`` produced."""

    header: str
    """Which runs were read and how they were laid out."""
    markdown: str
    """The table, its caption and footnote."""
    table: Table | None
    """The numbers (None when the experiment has only human runs: the meta part alone)."""
    selection: Selection
    """The runs averaged and those left out."""
    out: Path
    """The output folder."""
    files: tuple[Path, ...]
    """Every file written."""
    notes: tuple[str, ...]
    """Skipped metrics and figures."""
    logged_to: str | None
    """The sweep parent run the files were logged to (None: no sweep)."""
    meta: str = ""
    """The meta-evaluation tables as Markdown ('' when not made; ``runner.report.meta.make``)."""

    def text(self) -> str:
        """What the command prints."""
        table = ["", self.markdown.rstrip()] if self.markdown else []
        lines = [self.header, *table, "", *self.notes]
        lines += ["", self.meta.rstrip(), ""] if self.meta else []
        lines.append(f"wrote {len(self.files)} files to {self.out}")
        if self.logged_to:
            lines.append(f"logged them to the sweep's parent run {self.logged_to} under report/")
        return "\n".join(lines)


def _log_to_parent(uri: str, run_id: str, files: list[Path]) -> None:
    """The report's files as artifacts ``report/<name>`` of the sweep's parent run."""
    from runner.tracking.writer import Tracker

    parent = Tracker.for_run(uri, run_id)
    for path in files:
        parent.log_file(path, "report")


def _default_out(experiment: str, sweep_id: str | None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", experiment)
    return Path.cwd() / "reports" / f"{safe}-{sweep_id or 'all'}"


def _header(config: ReportConfig, selection: Selection, grid: Layout) -> str:
    """What was read and how it is laid out, for the printout and ``table.md``."""
    keys = f"Rows: {', '.join(grid.rows) or '—'}; columns: {', '.join(grid.columns) or '—'}"
    if grid.implied:
        keys += f"; implied by them: {', '.join(grid.implied)}"
    if grid.pooled:
        keys += f"; pooled over: {', '.join(grid.pooled)}"
    counts = f"{len(selection.runs)} runs averaged, {len(selection.excluded)} not"
    older = selection.older_versions
    if older:
        changed = sorted({what for e in older for what in e.changed})
        counts += (
            f" ({len(older)} superseded by a newer version of their cell; "
            f"changed: {', '.join(changed)})"
        )
    passed = "".join(f"{line}\n" for line in selection.passed_over)
    return f"# Report: {selection.scope}\n{passed}Store: {config.uri}. {counts}.\n{keys}."


def _figures(
    config: ReportConfig, selection: Selection, scores: Scores, grid: Layout, out: Path
) -> list[Plot]:
    """The three figures (each written, or skipped with a note)."""
    from runner.report import plots

    kinds = plots.error_kinds(selection.runs)
    x, y = config.scatter
    needed = [y, x, *(name for _, names in kinds for name in names)]
    cells = _cells(config, selection, scores, grid, needed)
    series = histories(config.uri, selection.runs, plots.series_names(cells.facts))
    return [
        plots.score_vs_length(cells, out / PLOT_FILES[0], x, y),
        plots.error_types(cells, kinds, out / PLOT_FILES[1]),
        plots.series_curves(selection.runs, grid, series, cells.facts, out / PLOT_FILES[2]),
    ]


def _cells(
    config: ReportConfig, selection: Any, scores: Scores, grid: Any, metrics: list[str]
) -> Any:
    """Cells of ``metrics`` with the configured bootstrap (one call shape for table and plots)."""
    from runner.report.table import build_table
    from runner.tracking.reader import samples_of

    return build_table(
        selection.runs,
        scores,
        grid,
        metrics,
        resamples=config.resamples,
        confidence=config.confidence,
        seed=config.seed,
        samples=samples_of(config.uri, list(selection.runs)),
    )


def _columns(
    config: ReportConfig, runs: tuple[RunRecord, ...], scores: Scores
) -> tuple[list[str], list[str]]:
    """The table's metrics and the notes saying what was left out or added.

    The paper's four columns first, then the headline metrics the runs recorded (a
    researcher's own metric, a faithfulness-only run): none is named in this code. An
    explicit ``metric_keys`` is the whole list; recorded headline metrics it leaves out
    are named in a note, so no result disappears without a word.
    """
    recorded = recorded_headline(runs)
    wanted = list(config.metrics)
    added = [m for m in recorded if m not in wanted] if config.adds_headline else []
    metrics = present_metrics((*wanted, *added), runs, scores)
    notes = [f"skipped metric {m}: no selected run has it" for m in wanted if m not in metrics]
    shown = [m for m in added if m in metrics]
    if shown:
        notes.append(
            f"added the runs' headline metrics: {', '.join(shown)} "
            "(metric_keys=[...] picks the columns instead)"
        )
    notes += undecided_notes(runs)
    left = [m for m in recorded if m not in metrics and m in present_metrics_of(runs, scores)]
    if left:
        notes.append(
            f"not shown, though the runs recorded them as headline: {', '.join(left)} "
            "(add them to metric_keys, or leave metric_keys unset)"
        )
    return metrics, notes


def undecided_notes(runs: Sequence[RunRecord]) -> list[str]:
    """A line per run whose judge decided nothing for a headline value (``RunRecord.undecided``).

    Its cell has no value from that run (NaN is never averaged); the line says why, so an
    empty or thinner cell is not read as a result.
    """
    return [
        f"{key} of run {run.run_name} ({run.run_id[:8]}): undecided for every document "
        "(its judge decided nothing), not averaged; see its notes.json"
        for run in runs
        for key in run.undecided
    ]


def make_report(config: ReportConfig) -> Report:
    """Select the runs, build the table, write every output and log it to the sweep's parent."""
    from runner.report import format as report_format
    from runner.report.layout import layout

    selection, scores = read_runs(config)
    try:
        metrics, notes = _columns(config, selection.runs, scores)
    except DataError:
        only = _meta_only(config, selection)  # e.g. preferences imported over named systems
        if only is None:
            raise
        return only
    grid = layout(selection.runs, config.rows, config.columns)
    table = _cells(config, selection, scores, grid, metrics)
    header = _header(config, selection, grid)
    md = report_format.markdown(table, selection.excluded)
    texts = {
        TABLE_FILES["md"]: header + "\n\n" + md,
        TABLE_FILES["tex"]: report_format.latex(table, selection.excluded),
        TABLE_FILES["csv"]: report_format.csv_text(table),
    }
    out = config.out or _default_out(config.experiment, selection.sweep_id)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (out / name).write_text(text, encoding="utf-8")
    files = [out / name for name in texts]
    for name in PLOT_FILES:
        (out / name).unlink(missing_ok=True)  # a figure skipped now must not survive from before
    if config.plots:
        drawn = _figures(config, selection, scores, grid, out)
        files += [p.path for p in drawn if p.path]
        notes += [p.note for p in drawn if not p.path]
    from runner.report.meta.make import write_meta

    meta = write_meta(config, out)  # None: no human run (or meta=false)
    files += meta.files if meta else []
    if selection.sweep_id:
        _log_to_parent(config.uri, selection.sweep_id, files)
    return Report(
        header,
        md,
        table,
        selection,
        out,
        tuple(files),
        tuple(notes),
        selection.sweep_id,
        meta.markdown if meta else "",
    )


def _meta_only(config: ReportConfig, selection: Selection) -> Report | None:
    """The meta-evaluation alone, when no run has a metric of the table but human runs exist.

    Pairwise preferences or Appendix J verdicts over named systems make a human run with no
    metric; the report then writes its meta tables instead of stopping on the empty table.
    """
    from runner.report.meta.make import write_meta

    out = config.out or _default_out(config.experiment, selection.sweep_id)
    out.mkdir(parents=True, exist_ok=True)
    meta = write_meta(config, out)
    if meta is None:
        return None
    note = f"no selected run has any of metric_keys={list(config.metrics)}: no main table"
    header = f"# {config.experiment}: meta-evaluation of human judgments"
    return Report(header, "", None, selection, out, tuple(meta.files), (note,), None, meta.markdown)


def _one_line(err: BaseException) -> str:
    """Hydra's error as one line, with the report's own settings in the hint."""
    found = re.search(r"Could not override '([^']+)'", str(err))
    if not found:
        return cli_errors.one_line(err)
    key = found.group(1)
    if key.split(".")[0] == "metrics":
        return (
            "metrics= picks the runner's metric plugins; the report's list of metrics is "
            "metric_keys=[booookscore/score,stats/length_tokens]"
        )
    return f"{key} is not a report setting; valid: {', '.join(SETTINGS)}"


@hydra.main(config_path="pkg://runner.conf", config_name="report", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Validate, report, print."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # keep stdout the table
    try:
        raw = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        assert isinstance(raw, dict)
        report = make_report(build_report_config({str(k): v for k, v in raw.items()}))
    except RunnerError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(report.text())


if __name__ == "__main__":  # python -m runner.report.make, as before the move into report/
    cli_errors.reported(main, _one_line)
