"""The meta-evaluation part of ``python -m runner.report``: read, tabulate, write.

Written when the experiment has a human run (tag ``runner.kind=human``) and ``meta`` is
unset, always with ``meta=true`` (an error when there is nothing to compare), never with
``meta=false``. Files: ``meta.md`` (every table, captions and notes), ``meta.tex``, one CSV
per table (``meta_summaries.csv``, ``meta_preferences.csv``, ``meta_orderings.csv``) and
``meta_vs_human.png``. A table the judgments cannot support is left out with a note saying
what it needs. A metric adds tables of its own through its ``meta_tables`` hook
(``runner.report.meta.hooks``, ``runner.api.meta``): BooookScore's ``meta_sentences.csv`` and
``meta_precision.csv``, the faithfulness metric's ``meta_faithfulness.csv``, ``_claims`` and
``_systems``. An experiment with people's claim judgments alone gets no notes about the
coherence tables. Every ``meta_*.csv`` of an earlier report is removed first, so a table not
made now never survives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.api.errors import DataError
from runner.api.human_format import ClaimsJudgment
from runner.api.meta import Boot, MetaTable
from runner.human.judgments import CoherenceAnnotation
from runner.human.owner import owner_of
from runner.report.config import ReportConfig
from runner.report.meta import format as meta_format
from runner.report.meta.hooks import plugin_tables
from runner.report.meta.pairs import (
    ordering_table,
    preference_table,
    undirected_notes,
)
from runner.report.meta.plots import PLOT_FILE, Points, meta_plot
from runner.report.meta.read import JUDGMENTS_FILE, MetaInputs, read_meta
from runner.report.meta.tables import (
    human_score_name,
    human_scores,
    metric_pairs,
    ppi_table,
    summary_table,
)

NEEDS = {
    "meta_summaries": "coherence annotations or numeric ratings of summaries of a judged run "
    "with per-document metric values",
    "meta_preferences": "pairwise comparisons",
    "meta_orderings": "pairwise comparisons of two judged runs with per-document metric values",
}
"""What each table needs, for the note when it is left out."""
TEXT_FILES = ("meta.md", "meta.tex")


@dataclass(frozen=True)
class MetaReport:
    """What the meta-evaluation wrote."""

    markdown: str
    tables: tuple[MetaTable, ...]
    files: tuple[Path, ...]
    notes: tuple[str, ...]


def claims_only(inputs: MetaInputs) -> bool:
    """Every judgment is a claims judgment: a faithfulness study, no coherence table applies."""
    return all(isinstance(j, ClaimsJudgment) for j in inputs.judgments)


def build_tables(
    inputs: MetaInputs,
    metrics: Sequence[str],
    boot: Boot,
    declared: tuple[Sequence[MetaTable], Sequence[str]] = ((), ()),
) -> tuple[list[MetaTable], list[str]]:
    """Every table the judgments support and a note for each they do not, then ``declared``.

    ``declared``: the tables and notes the metrics' ``meta_tables`` hooks made. The coherence
    tables' notes are left out when every judgment is a claims judgment (a faithfulness study
    needs none of them).
    """
    notes: list[str] = []
    metrics = inputs.with_members(metrics)  # a panel's members each a row after the panel
    made = {
        "meta_summaries": summary_table(inputs, metrics, boot),
        "meta_preferences": preference_table(inputs, boot),
        "meta_orderings": ordering_table(inputs, metrics, boot),
    }
    tables = [t for t in made.values() if t is not None]
    notes += undirected_notes(inputs, metrics)
    if not claims_only(inputs):
        notes += [f"no {n} table: it needs {NEEDS[n]}" for n, t in made.items() if t is None]
    return [*tables, *declared[0]], [*notes, *declared[1]]


def plot_points(inputs: MetaInputs, metrics: Sequence[str]) -> Points:
    """(human score, metric) -> (human, metric value) per summary, for the figure."""
    return {
        (name, metric): metric_pairs(inputs, human, metric)
        for name, human in human_scores(inputs).items()
        for metric in metrics
    }


def bounded_axes(inputs: MetaInputs) -> set[str]:
    """The human scores on a 0..100 scale: each span format owner's."""
    owners = dict(owner_of(j) for j in inputs.judgments if isinstance(j, CoherenceAnnotation))
    return {human_score_name(human.name) for human in owners.values()}


def ranges(inputs: MetaInputs) -> dict[str, tuple[float, float]]:
    """Each metric's declared range, as the judged runs recorded it (``Value.range``)."""
    return {key: value.range for key, value in inputs.values.items() if value.range is not None}


def _clean(out: Path) -> None:
    """Remove a previous report's meta files: a table not made now must not survive."""
    for name in (*TEXT_FILES, PLOT_FILE):
        (out / name).unlink(missing_ok=True)
    for table in out.glob("meta_*.csv"):  # the core's and every metric's, today's or not
        table.unlink()


PPI_TABLES = "meta_ppi"
"""The prefix of the tables a metric gives for ``ppi=true``."""
PPI_TABLE = "meta_ppi_summaries"
"""The report's own: values people scored (span annotations' scores, ratings)."""


def write_meta(config: ReportConfig, out: Path) -> MetaReport | None:
    """Read the experiment's human runs, write the tables and figure; None when not asked."""
    from runner.tracking.reader import find_runs

    _clean(out)
    if config.meta is False:
        return None
    records = find_runs(config.uri, config.experiment)
    inputs = read_meta(config.uri, records)
    if not inputs.judgments:
        if config.meta is None:
            return None
        raise DataError(
            f"meta=true but experiment '{config.experiment}' has no FINISHED human run with "
            f"{JUDGMENTS_FILE} (tag runner.kind=human); record the human judgments first, "
            "or drop meta=true"
        )
    boot = Boot(config.resamples, config.confidence, config.seed)
    declared = plugin_tables(
        config.uri, records, inputs, boot, reserved=(*NEEDS, PPI_TABLE), ppi=config.ppi
    )
    tables, notes = build_tables(inputs, config.metrics, boot, declared)
    if config.ppi:
        table, more = ppi_table(inputs, boot)
        tables, notes = [*tables, *([table] if table else [])], [*notes, *more]
        if not any(t.name.startswith(PPI_TABLES) for t in tables):
            reasons = [n for n in notes if "PPI" in n] or ["no value people scored"]
            others = len(reasons) - 1  # one reason per value and run: a 1,097-character line
            why = reasons[0] + (f"; and {others} more like it" if others else "")
            raise DataError(
                f"ppi=true: no value has people's labels and a judge's on two or more documents "
                f"({why}); import people's labels of the judged summaries "
                "(python -m runner.annotate import FILE)"
            )
    notes = [*inputs.notes, *notes]
    files: list[Path] = []
    for table in tables:
        path = out / f"{table.name}.csv"
        path.write_text(meta_format.csv_text(table), encoding="utf-8")
        files.append(path)
    if config.plots and not claims_only(inputs):  # the figure plots human scores: none here
        points = plot_points(inputs, config.metrics)
        drawn, note = meta_plot(points, out / PLOT_FILE, bounded_axes(inputs), ranges(inputs))
        files += [drawn] if drawn else []
        notes += [] if drawn else [note]
    runs = ", ".join(r.run_id[:8] for r in inputs.human_runs)
    notes.insert(0, f"human judgments: {len(inputs.judgments)} from run(s) {runs}")
    md = meta_format.markdown(tables, notes)
    (out / TEXT_FILES[0]).write_text(md, encoding="utf-8")
    (out / TEXT_FILES[1]).write_text(meta_format.latex(tables), encoding="utf-8")
    files = [out / TEXT_FILES[0], out / TEXT_FILES[1], *files]
    return MetaReport(md, tuple(tables), tuple(files), tuple(notes))
