"""BooookScore with people as the judge: its human-judgment format, ``HUMAN``.

A person flags the confusing spans of a summary with the taxonomy's error types and the
questions each span leaves (sec. 3's protocol; the authors' annotation files have the same
shape). The human BooookScore of an annotated summary is 100 x (1 - flagged / sentences):
sentences by ``split_sentences`` (NLTK Punkt, as the judge's metric splits), flagged by the
paper's footnote 12 (each single span and each relation is one flagged sentence). Per
summary the human run records the metric's own value names: ``score``, ``sentences``,
``confused_sentences`` and ``type/<label>`` (the share of sentences flagged with that type),
so it stands beside the judge's ``booookscore/*``; on the judged document's trace each span is
a ``coherence_error`` and the summary's score a ``booookscore`` assessment, the judge's names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from metrics.booookscore.parse import LABELS, type_key
from runner.api import CoherenceAnnotation, HumanDataError, HumanFormat, split_sentences

TAXONOMY: dict[str, str] = {
    "entity omission": "an entity (person, object, place, concept...) is mentioned, but key "
    "details are missing or unclear",
    "event omission": "an event is mentioned, but key details are missing or unclear",
    "causal omission": "the reason or motivation for something is missing or unclear",
    "salience": "inclusion of trivial details that do not contribute to the main storyline",
    "discontinuity": "an interruption in the flow of the narrative: sudden jumps between "
    "perspectives, time periods or settings; poor transitions; sentences or paragraphs that "
    "seem out of place; illogical sentence order or summary structure",
    "duplication": "redundant repetition of similar information",
    "inconsistency": "two parts of the summary contain contradicting information",
    "language": "grammar issues; confusing wording or phrasing",
}
"""Appendix M.4's definitions of the eight error types (``LABELS``' order)."""

INSTRUCTIONS = (
    "Read the whole summary. Highlight each span that confuses you (it may cover several "
    "sentences), pick its error types, and write the questions it leaves you with.",
    "A confusion counts only if, left unresolved, readers would struggle substantially to "
    "grasp the main narrative or the summary would seem incoherent, and if it cannot be "
    "resolved from the summary alone.",
    "When two spans are confusing together (e.g. a jump between paragraphs), highlight both "
    "and link them with a relation; put the questions and types on the first span.",
)
"""The span-annotation task's instructions (sec. 3's annotation protocol)."""


def booookscore(annotation: CoherenceAnnotation) -> float:
    """100 x (1 - flagged / sentences) of one annotated summary."""
    sentences = len(split_sentences(annotation.summary))
    if sentences == 0:
        raise HumanDataError(
            f"book {annotation.doc_id!r} ({annotation.system}, annotator "
            f"{annotation.annotator}), field 'summary': has no sentence to score; "
            "drop the empty summary's annotation"
        )
    return 100.0 * (1.0 - annotation.flagged / sentences)


def mean_booookscore(annotations: Iterable[CoherenceAnnotation]) -> float:
    """The mean of ``booookscore`` over the annotated summaries (the paper's system score)."""
    scores = [booookscore(a) for a in annotations]
    if not scores:
        raise HumanDataError("no coherence annotation to score; pass at least one")
    return sum(scores) / len(scores)


def summary_values(annotations: Sequence[CoherenceAnnotation]) -> dict[str, float]:
    """One summary's values from its annotators' annotations (each annotator's, averaged).

    Every type of ``LABELS`` is given (0 where none is flagged: a rate), then any other label
    found, so a system's mean rate counts the summaries without that error.
    """
    scores = [booookscore(a) for a in annotations]
    sentences = len(split_sentences(annotations[0].summary))
    values = {
        "score": sum(scores) / len(scores),
        "sentences": float(sentences),
        "confused_sentences": sum(a.flagged for a in annotations) / len(annotations),
    }
    found = {label for a in annotations for marked in _labels(a) for label in marked}
    for label in (*LABELS, *sorted(found - set(LABELS))):
        hits = [sum(label in marked for marked in _labels(a)) for a in annotations]
        values[type_key(label)] = 100.0 * sum(hits) / len(hits) / sentences
    return values


def _labels(annotation: CoherenceAnnotation) -> list[tuple[str, ...]]:
    """The error types of each flagged span and span pair."""
    return [s.labels for s in annotation.singles] + [r.labels for r in annotation.relations]


HUMAN = HumanFormat(
    name="BooookScore",
    labels=LABELS,
    score=booookscore,
    values=summary_values,
    span_assessment="coherence_error",
    summary_assessment="booookscore",
    task="coherence",
    task_title="Find the confusing spans of a book summary",
    instructions=INSTRUCTIONS,
    label_help=TAXONOMY,
)
"""BooookScore's human-judgment format, found by the core through ``runner.plugins``."""
