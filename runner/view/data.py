"""What the summary viewer shows, as plain values: marked summaries and their scores.

``runner.view.page`` reads a run's artifacts and renders; this module turns them into the
view's values and knows nothing of MLflow or HTML. Summaries are split with the same
Punkt splitter the BooookScore metric used (``runner.api.text``), so a sentence finds its
annotation by exact text, as ``annotations.json`` keys it. How each summary was built
(the trace) is ``runner.view.trace``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.api.text import sentence_spans

PALETTE = (
    "#ffb870",
    "#f3e36b",
    "#9be39b",
    "#8fdcf0",
    "#a9c4ff",
    "#cdb4ff",
    "#ff9f9f",
    "#ffb3ec",
)
"""The legend's background colours, given to a run's categories in their order (BooookScore's
eight error types get one each, entity omission orange to language pink)."""
CORE_GROUPS = ("strategy",)
"""Per-document values the job itself records (the strategy's counters), never a column."""

Step = dict[str, Any]


def colors(labels: Sequence[str]) -> dict[str, str]:
    """A background colour per category label, in order (the palette repeats past its end)."""
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}


def slug(label: str) -> str:
    """'entity omission' -> 'entity_omission': the CSS class and the metric's suffix."""
    return label.replace(" ", "_")


@dataclass(frozen=True)
class Piece:
    """A stretch of a summary: a sentence, or the text between two sentences."""

    text: str
    """Exactly the summary's characters (gaps keep line breaks)."""
    kind: str
    """'gap', 'plain' (not judged), 'ok' (no confusion), 'flagged' or 'unparsed'."""
    types: tuple[str, ...] = ()
    """The judge's error types (flagged only)."""
    questions: str = ""
    """The judge's questions, or the parse error of an unparsed sentence."""
    note: int = 0
    """Number of the note explaining the mark (1-based; 0 for none)."""


@dataclass(frozen=True)
class Note:
    """One judged sentence that carries a mark, listed under the summary."""

    number: int
    sentence: str
    types: tuple[str, ...]
    questions: str
    unparsed: bool = False
    found: bool = True
    """False when the annotation's sentence is not a sentence of the summary as split."""
    answer: str = ""
    """The judge's last raw answer, for an unparsed sentence."""


@dataclass(frozen=True)
class Marked:
    """A summary split into pieces, with its notes and per-type counts (by occurrence)."""

    pieces: list[Piece]
    notes: list[Note]
    counts: dict[str, int]
    """Label -> flagged sentences carrying it; 'unparsed', 'ok' and 'flagged' too."""


def _types(entry: dict[str, Any]) -> tuple[str, ...]:
    types = entry.get("types") or ()
    return tuple(str(t) for t in types) if isinstance(types, (list, tuple)) else (str(types),)


def mark_summary(summary: str, annotations: dict[str, Any] | None) -> Marked:
    """Split ``summary`` as the metric did and mark every judged sentence.

    ``annotations`` is the document's entry of ``annotations.json`` (None when the metric
    did not run: nothing is marked). A sentence repeated in the summary is marked at each
    occurrence and explained by one note, as the metric asks once and counts each.
    """
    pieces: list[Piece] = []
    numbers: dict[str, int] = {}
    notes: list[Note] = []
    counts = dict.fromkeys(["flagged", "unparsed", "ok"], 0)
    position = 0
    for start, end in sentence_spans(summary):
        if start > position:
            pieces.append(Piece(summary[position:start], "gap"))
        position = end
        sentence = summary[start:end]
        entry = annotations.get(sentence) if annotations is not None else None
        if not isinstance(entry, dict):
            pieces.append(Piece(sentence, "plain"))
            continue
        unparsed, types = bool(entry.get("unparsed")), _types(entry)
        if not unparsed and not types:
            counts["ok"] += 1
            pieces.append(Piece(sentence, "ok"))
            continue
        questions = str(entry.get("error") if unparsed else entry.get("questions") or "")
        if sentence not in numbers:
            numbers[sentence] = len(notes) + 1
            answer = str(entry.get("answer") or "") if unparsed else ""
            notes.append(
                Note(numbers[sentence], sentence, types, questions, unparsed, True, answer)
            )
        kind = "unparsed" if unparsed else "flagged"
        counts[kind] += 1
        for label in types:
            counts[label] = counts.get(label, 0) + 1
        pieces.append(Piece(sentence, kind, types, questions, numbers[sentence]))
    if position < len(summary):
        pieces.append(Piece(summary[position:], "gap"))
    for sentence, entry in (annotations or {}).items():
        if (
            sentence not in numbers
            and isinstance(entry, dict)
            and (entry.get("unparsed") or _types(entry))
        ):
            questions = str(entry.get("error") or entry.get("questions") or "")
            notes.append(
                Note(
                    len(notes) + 1,
                    sentence,
                    _types(entry),
                    questions,
                    bool(entry.get("unparsed")),
                    found=False,
                )
            )
    return Marked(pieces, notes, counts)


# ------------------------------------------------------------------------ score columns


@dataclass(frozen=True)
class Column:
    """A column of the document table."""

    key: str
    """The scores.json key (``<metric>/<value>``)."""
    title: str


def headline_columns(
    scores: dict[str, dict[str, Any]],
    headline: Sequence[str],
    titles: Mapping[str, str] | None = None,
) -> list[Column]:
    """The document table's columns: the run's headline values, then each other metric's.

    ``headline`` is what the run recorded (``runner.tracking.tags.HEADLINE_TAG``), keyed by
    the labels the run gave its metrics. A metric group without a recorded headline (a metric
    naming none, or a run from before the tag) shows its ``score``, else its first value: a
    metric added later shows up without changes here. ``titles``: the values' declared
    titles (``runner.plugins.values``); a value without one is titled by its key.
    """
    named = titles or {}
    keys = {k for values in scores.values() for k in values}
    columns = [Column(k, named.get(k, k)) for k in headline if k in keys]
    shown = {k.split("/", 1)[0] for k in headline}
    groups: dict[str, list[str]] = {}
    for key in sorted(keys):
        group = key.split("/", 1)[0]
        if group not in shown and group not in CORE_GROUPS and "/" in key:
            groups.setdefault(group, []).append(key)
    for group, found in groups.items():
        key = f"{group}/score" if f"{group}/score" in found else found[0]
        columns.append(Column(key, named.get(key, key)))
    return columns


def number(value: Any) -> float | None:
    """A finite float, or None for missing, NaN and non-numbers (shown as a dash)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None
