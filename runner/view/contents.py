"""What the viewer page shows of one run, as plain values for the template.

The run's settings and totals as facts, the legend of error types, and one ``DocView`` per
document (its marked summary, headline values, scores, how it was made and notes), built from
the run record and its artifacts (``runner.view.artifacts``). No MLflow and no HTML here:
``runner.view.page`` renders.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.plugins import categories
from runner.plugins import values as value_facts
from runner.tracking.tags import HEADLINE_TAG
from runner.view.data import (
    Column,
    Marked,
    colors,
    headline_columns,
    mark_summary,
    number,
    slug,
)
from runner.view.steps import Fact
from runner.view.trace import Section, trace_sections

if TYPE_CHECKING:
    from runner.tracking.reader import RunRecord
    from runner.view.artifacts import RunFiles


@dataclass(frozen=True)
class Legend:
    """One error type of the legend: its colour, the run's rate and its count.

    The types are the categories the run recorded for its metrics (``runner.plugins.categories``);
    the rate is the metric ``<label>/<value key>`` of the metric's label; the count is of the
    flagged sentences carrying it across the run's documents.
    """

    label: str
    slug: str
    color: str
    rate: float | None
    count: int


@dataclass(frozen=True)
class DocView:
    """One document of the page."""

    index: int
    doc_id: str
    summary: str
    marked: Marked
    values: list[float | None]
    """The headline columns' values, in ``Page.columns`` order."""
    scores: list[tuple[str, float | None]]
    sections: list[Section]
    notes: list[str]


@dataclass(frozen=True)
class Page:
    """Everything the template shows."""

    run: RunRecord
    settings: list[Fact]
    totals: list[Fact]
    legend: list[Legend]
    columns: list[Column]
    docs: list[DocView]
    judged: bool
    """True when the run has annotations (the BooookScore metric ran)."""
    unparsed: int
    generated: str


def settings_line(params: dict[str, str]) -> list[Fact]:
    """Strategy, each role with its model and temperature, chunk, prompts, data, metrics."""
    facts = [Fact("strategy", params.get("strategy", "?"))]
    for role in [r for r in params.get("roles", "").split(",") if r and r != "none"]:
        parts = [params.get(role, "?"), params.get(f"{role}.model", "")]
        temperature = params.get(f"{role}.temperature")
        facts.append(
            Fact(
                role,
                " · ".join(p for p in parts if p)
                + (f" · T={temperature}" if temperature not in (None, "None") else ""),
            )
        )
    for key, title in (
        ("chunk", "chunk"),
        ("temperature", "temperature"),
        ("strategy.prompts", "prompts"),
        ("data", "data"),
        ("data.path", "data.path"),
        ("metrics", "metrics"),
    ):
        if params.get(key) not in (None, ""):
            facts.append(Fact(title, params[key]))
    return facts


def _totals(metrics: dict[str, float]) -> list[Fact]:
    cost = metrics.get("cost_usd")
    out = [Fact("cost", "—" if cost is None else f"${cost:,.4f}")]
    for key, title in (
        ("calls", "calls"),
        ("cache_hits", "cache hits"),
        ("documents", "documents"),
    ):
        if key in metrics:
            out.append(Fact(title, f"{metrics[key]:,.0f}"))
    if "wall_time_s" in metrics:
        out.append(Fact("wall time", f"{metrics['wall_time_s']:,.1f} s"))
    return out


def build_legend(run: RunRecord, docs: list[DocView]) -> list[Legend]:
    """One entry per category the run's metrics recorded (a label shared by two, once)."""
    rates: dict[str, float | None] = {}
    for metric, pairs in categories.recorded(run.tags, run.params, run.metrics).items():
        for label, key in pairs:
            rates.setdefault(label, number(run.metrics.get(f"{metric}/{key}")))
    shades = colors(list(rates))
    return [
        Legend(
            label,
            slug(label),
            shades[label],
            rate,
            sum(d.marked.counts.get(label, 0) for d in docs),
        )
        for label, rate in rates.items()
    ]


def recorded_headline(run_tags: dict[str, str]) -> list[str]:
    """The headline values the run recorded ([] for a run from before the tag, or a bad one)."""
    try:
        value = json.loads(run_tags.get(HEADLINE_TAG, "[]"))
    except ValueError:
        return []
    return [str(k) for k in value] if isinstance(value, list) else []


def build_page(run: RunRecord, files: RunFiles) -> Page:
    """The page's values from the run record and its artifacts."""
    facts = value_facts.recorded(run.tags, run.params, run.metrics)
    titles = {key: value.title for key, value in facts.items() if value.title}
    columns = headline_columns(files.scores, recorded_headline(run.tags), titles)
    order = list(dict.fromkeys([*files.summaries, *files.scores, *files.traces]))
    docs = []
    for index, doc_id in enumerate(order):
        summary = files.summaries.get(doc_id, "")
        annotations = (
            (files.annotations or {}).get(doc_id) if files.annotations is not None else None
        )
        if files.annotations is not None and annotations is None:
            annotations = {}  # judged, nothing listed (the released format's null book)
        values = files.scores.get(doc_id, {})
        docs.append(
            DocView(
                index,
                doc_id,
                summary,
                mark_summary(summary, annotations),
                [number(values.get(c.key)) for c in columns],
                [(k, number(v)) for k, v in values.items()],
                trace_sections(files.traces.get(doc_id), summary, files.views.get(doc_id)),
                list(files.notes.get(doc_id, [])),
            )
        )
    legend = build_legend(run, docs)
    return Page(
        run,
        settings_line(run.params),
        _totals(run.metrics),
        legend,
        columns,
        docs,
        files.annotations is not None,
        sum(d.marked.counts["unparsed"] for d in docs),
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
