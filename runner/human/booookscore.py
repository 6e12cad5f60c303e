"""Human BooookScore: the paper's score computed from people's coherence annotations.

BooookScore of a summary is 100 x (1 - flagged / sentences): sentences by
``runner.text.split_sentences`` (NLTK Punkt, as metrics/booookscore/__init__.py splits), flagged by
the paper's footnote 12 (each single span and each relation is one flagged sentence; see
``CoherenceAnnotation.flagged``). A system's score is the mean over its summaries, so it
stands beside the judge's ``booookscore/score``.
"""

from __future__ import annotations

from collections.abc import Iterable

from runner.human.judgments import CoherenceAnnotation, HumanDataError
from runner.text import split_sentences


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
