"""People's span annotations of a summary, and the hook by which a metric owns their format.

A metric whose score people can give too (BooookScore: a person flags the confusing spans of
a summary, as its judge flags sentences) declares ``HUMAN = HumanFormat(...)`` at module
level. The core (``runner.human``, ``runner.annotate``, ``runner.report.meta``) then reads,
records and compares those annotations through it, so it knows no metric by name: the labels
a span may carry, the human score of one annotated summary, the values a human run records
under the metric's label, the names of the assessments on the judged document's trace and
the text of the Label Studio task people annotate in (``span_task(HUMAN)``, declared in the
metric's ``HUMAN_TASKS``) all come from the metric.

An annotation names the metric that owns it (``CoherenceAnnotation.metric``, as the registry
finds it: an entry point's name, an import path or a loose module's stem). An empty name is
the one built-in metric that declares ``HUMAN``: judgments stored before the hook existed
name none.

A plugin-API module: it imports nothing of ``runner`` beyond the other plugin-API modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.api.errors import DataError


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
    """Labels from the owning metric's ``HumanFormat.labels`` (BooookScore: error types)."""


@dataclass(frozen=True)
class Relation:
    """Two spans that are confusing together (e.g. a discontinuity between paragraphs)."""

    first: Span
    second: Span
    questions: str = ""
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class CoherenceAnnotation:
    """One annotator's span annotation of one summary, in the format of the metric ``metric``."""

    doc_id: str
    system: str
    annotator: str
    summary: str
    singles: tuple[Span, ...] = ()
    relations: tuple[Relation, ...] = ()
    metric: str = ""
    """The metric that owns the format (see the module docstring); '' for the built-in one."""

    @property
    def flagged(self) -> int:
        """Flagged units: each single span and each relation is one (BooookScore's footnote 12)."""
        return len(self.singles) + len(self.relations)


@dataclass(frozen=True)
class HumanFormat:
    """What a metric declares as ``HUMAN``: how people's span annotations become its values.

    The callables receive annotations of this metric only.
    """

    name: str
    """The metric's name as people read it (``BooookScore``): the human score is
    ``<name> (human)`` in the meta-evaluation."""
    labels: tuple[str, ...]
    """The labels a person may give a span, in order; any other label is an error."""
    score: Callable[[CoherenceAnnotation], float]
    """One annotated summary's human score, on the scale of the metric's ``score`` value;
    raises ``HumanDataError`` when the summary cannot be scored."""
    values: Callable[[Sequence[CoherenceAnnotation]], dict[str, float]]
    """One summary's values from its annotators' annotations, named as the metric names its
    own (``score``, ...); the human run records them as ``<metric>/<value>``."""
    span_assessment: str
    """The assessment name of a flagged span on the judged document's trace (the name the
    metric's judge uses for a flagged sentence)."""
    summary_assessment: str
    """The assessment name of the summary's human score on that trace."""
    task: str
    """The name of the format's Label Studio task kind, ``span_task(HUMAN)``, which the
    metric declares in ``HUMAN_TASKS`` (``python -m runner.annotate export <task>``)."""
    task_title: str = "Find the confusing spans of a summary"
    instructions: tuple[str, ...] = ()
    """The task's instructions, one paragraph each, above the labels."""
    label_help: Mapping[str, str] = field(default_factory=dict)
    """Label -> its definition, shown with the task."""


@dataclass(frozen=True)
class Rating:
    """One person's score or label of one summary on one criterion (a Likert rating...).

    What a ratings table's row is, and what a task kind of a metric's gives for a question
    with one answer per summary; recorded as a HUMAN assessment named ``criterion`` on the
    judged document's trace.
    """

    doc_id: str
    system: str
    criterion: str
    value: float | str
    annotator: str


CLAIM_LABELS: tuple[str, ...] = ("supported", "partial", "unsupported", "cannot_tell")
"""What a person may say of one claim (or sentence) of a summary against its source:
FABLES' Yes / PartialSupport / No / Inapplicable, the Label Studio ``claims`` task's
supported / partially / not supported / cannot tell."""


@dataclass(frozen=True)
class ClaimLabel:
    """One person's label of one claim (or summary sentence) against the source."""

    index: int
    """The claim's position in the summary's list of claims (or sentences), from 0."""
    text: str
    label: str
    """One of ``CLAIM_LABELS``."""
    evidence: tuple[str, ...] = ()
    """Quotes of the source the person cites."""
    reason: str = ""


@dataclass(frozen=True)
class ClaimsJudgment:
    """One person's faithfulness judgment of one summary: its label, and its claims' labels.

    StorySumm gives the summary's label, its difficulty and per-sentence labels with
    explanations (``unit="sentence"``); FABLES gives per-claim labels with evidence and reasons
    (``faithful`` None: the release has no summary label). The Label Studio ``claims`` task
    gives per-claim labels.
    """

    doc_id: str
    system: str
    annotator: str
    summary: str
    faithful: bool | None = None
    """The summary-level label: True faithful, False not, None not given."""
    difficulty: str = ""
    """StorySumm's ``easy`` or ``hard`` (of an unfaithful summary); '' when not given."""
    claims: tuple[ClaimLabel, ...] = ()
    unit: str = "claim"
    """``claim`` (atomic claims) or ``sentence`` (the summary's sentences)."""
    metric: str = ""
    """The metric that owns the format (as ``CoherenceAnnotation.metric``)."""


VERDICTS: tuple[str, ...] = ("Agree", "Partially agree", "Don't agree")
"""Appendix J's verdicts on one annotation; its precision counts the first two."""


@dataclass(frozen=True)
class Validation:
    """A validator's verdict on one annotation (BooookScore's Appendix J): was it right?

    Stored as a judgment of kind ``verdict``; the BooookScore metric's meta tables give each
    source's annotation precision from them.
    """

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
class HumanFile:
    """A file format of people's judgments that a metric module reads (its ``HUMAN_FILES``).

    ``python -m runner.annotate import FILE`` asks each metric declaring ``HUMAN_FILES`` whether
    it ``recognizes`` the file (by its shape, never its name) and reads it with the one that
    does; a file no format recognizes is one line naming the formats tried.
    """

    name: str
    """The format as people know it (``StorySumm release``)."""
    recognizes: Callable[[Path], bool]
    """True when the file has this format's shape (cheap; never raises for another format)."""
    read: Callable[[Path], tuple[list[ClaimsJudgment], list[str]]]
    """The file's judgments and notes (one line each: a repaired line...); raises
    ``HumanDataError`` naming the file and the field for a file of this format it cannot read."""
