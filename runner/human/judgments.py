"""Human judgments as plain values: what a person said about a summary, or about a pair.

Four kinds, one per kind of study in the seed papers and the metrics article:

- ``CoherenceAnnotation``: one annotator's BooookScore annotation of one summary (spans
  with questions and error types, and relations between two spans; sec. 4 of the paper);
- ``Preference``: one pairwise comparison (Table 4: detail, structure, logic, overall
  preference; contradiction and omission flags);
- ``Verdict``: a validator's verdict on one annotation (Appendix J);
- ``Rating``: a per-document score or label from any other tool (Likert ratings...).

Every judgment names its document and the system(s) judged: an MLflow run id, or the name
of a system of ``data=summaries`` (``hier``, ``inc``...). Readers build these values from
files; the tracking side stores them as JSON lines (``to_record``/``from_record``) in a
human run's ``human/judgments.jsonl`` so the report reads them back from MLflow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from metrics.booookscore.parse import LABELS
from runner.errors import DataError

ERROR_TYPES: tuple[str, ...] = LABELS
"""The eight coherence error types of the BooookScore taxonomy, in the paper's order (the
judge's parser's own list, so people's labels and the judge's are the same strings)."""
CRITERIA: tuple[str, ...] = ("detail", "structure", "logic", "preference")
"""Pairwise criteria answered ``Summary 1 | Summary 2 | Draw`` (Table 4; ``preference`` is
the overall one)."""
SIDE_CHOICES: tuple[str, ...] = ("Summary 1", "Summary 2", "Draw")
"""The choices of a pairwise criterion as the annotator sees them."""
DRAW = "draw"
"""A pairwise criterion with no winner."""
VERDICTS: tuple[str, ...] = ("Agree", "Partially agree", "Don't agree")
"""Appendix J's verdicts on one annotation; precision counts the first two."""


class HumanDataError(DataError):
    """A human-judgment file that cannot be read as such.

    One line naming the file, the book (or task) and the field, and what to do.
    """


@dataclass(frozen=True)
class Span:
    """A flagged stretch of a summary (it may cover several sentences)."""

    text: str
    questions: str = ""
    labels: tuple[str, ...] = ()
    """Error types (``ERROR_TYPES``)."""


@dataclass(frozen=True)
class Relation:
    """Two spans that are confusing together (e.g. a discontinuity between paragraphs)."""

    first: Span
    second: Span
    questions: str = ""
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class CoherenceAnnotation:
    """One annotator's coherence annotation of one summary."""

    doc_id: str
    system: str
    annotator: str
    summary: str
    singles: tuple[Span, ...] = ()
    relations: tuple[Relation, ...] = ()

    @property
    def flagged(self) -> int:
        """Flagged sentences by the paper's footnote 12.

        Each single span and each relation counts as one.
        """
        return len(self.singles) + len(self.relations)


@dataclass(frozen=True)
class Preference:
    """One pairwise comparison of two summaries of the same document."""

    doc_id: str
    systems: tuple[str, str]
    """The systems of "Summary 1" and "Summary 2", in the order the annotator saw them."""
    annotator: str
    choices: dict[str, str]
    """Criterion (``CRITERIA``) -> the preferred system, or ``DRAW``."""
    flags: dict[str, bool] = field(default_factory=dict)
    """``contradiction`` and ``omission:<system>`` -> the annotator's Yes/No."""
    comments: dict[str, str] = field(default_factory=dict)
    """Criterion -> the annotator's free text."""


@dataclass(frozen=True)
class Verdict:
    """A validator's verdict on one annotation (Appendix J)."""

    doc_id: str
    source: str
    """Who made the annotation: ``human``, ``model``, or a run id."""
    annotation: dict[str, Any]
    """The annotation judged, as given (span or span pair, questions, labels)."""
    verdict: str
    """One of ``VERDICTS``."""
    annotator: str = ""
    reasons: str = ""


@dataclass(frozen=True)
class Rating:
    """A per-document score or label from any tool."""

    doc_id: str
    system: str
    criterion: str
    value: float | str
    annotator: str


Judgment = CoherenceAnnotation | Preference | Verdict | Rating
_KINDS: dict[str, type] = {
    "coherence": CoherenceAnnotation,
    "preference": Preference,
    "verdict": Verdict,
    "rating": Rating,
}


def kind_of(judgment: Judgment) -> str:
    """``coherence``, ``preference``, ``verdict`` or ``rating``."""
    return next(k for k, cls in _KINDS.items() if isinstance(judgment, cls))


def to_record(judgment: Judgment) -> dict[str, Any]:
    """A JSON-ready dict with its ``kind`` (one line of ``human/judgments.jsonl``)."""
    return {"kind": kind_of(judgment), **asdict(judgment)}


def from_record(record: dict[str, Any]) -> Judgment:
    """The judgment ``to_record`` wrote."""
    data = dict(record)
    kind = data.pop("kind", None)
    if kind == "coherence":
        data["singles"] = tuple(_span(s) for s in data.get("singles", ()))
        data["relations"] = tuple(
            Relation(_span(r["first"]), _span(r["second"]), r["questions"], tuple(r["labels"]))
            for r in data.get("relations", ())
        )
        return CoherenceAnnotation(**data)
    if kind == "preference":
        data["systems"] = tuple(data["systems"])
        return Preference(**data)
    if kind == "verdict":
        return Verdict(**data)
    if kind == "rating":
        return Rating(**data)
    raise HumanDataError(f"a stored judgment has kind={kind!r}; expected one of {list(_KINDS)}")


def _span(raw: dict[str, Any]) -> Span:
    return Span(raw["text"], raw.get("questions", ""), tuple(raw.get("labels", ())))
