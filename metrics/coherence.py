"""Local coherence: mean cosine similarity of sentence i and sentence i+2 of a summary.

Parola et al. (2023), as used by Meta's Large Concept Models paper and by the seed article
"A practical and effective guide for evaluating AI summaries": the mean cosine similarity
between the embeddings of sentence i and sentence i+2 of the summary,

    coherence = mean over i = 1 .. n-2 of cos(e_i, e_{i+2}),   cos(a, b) = a.b / (|a| |b|)

with the summary split by the project's sentence splitter (NLTK Punkt, English). The
article's sanity check: its LLM summary scores ~0.45 and drops below 0.4 when the
sentences are shuffled. The article embeds with OpenAI's text-embedding-3-small
(``embedder=openai_small``); the default here is the embedded all-MiniLM-L6-v2, so the
numbers are comparable across summaries scored with one embedder, not with the article's.

The gap (2 in the source) is a parameter. A summary with fewer than gap+1 sentences has no
pair: NaN with a note. A sentence whose vector is all zeros has no direction, so its
pairs are left out (and counted in a note) rather than given an arbitrary similarity.
Values: ``coherence``, ``pairs`` (pairs averaged); artifact ``coherence.json`` lists every
pair as {i, j, similarity} (sentences numbered from 0; similarity null when left out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from runner.api import (
    ConfigError,
    Document,
    Embedder,
    Metric,
    MetricResult,
    Value,
    split_sentences,
)

ROLES = ("embedder",)
PROMPT_DIRS = ("coherence",)
VALUES = {"coherence": Value(title="Local coherence", range=(-1, 1), better="higher")}
"""A mean cosine similarity: -1..1."""
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
ARTIFACT = "coherence.json"


class Coherence(Metric):
    """Local coherence with one embedder and one gap, bound once per job."""

    headline = ("coherence",)

    def __init__(self, embedder: Embedder, gap: int) -> None:
        """Bind the embedder and the gap (checked by ``setup``)."""
        self.embedder = embedder
        self.gap = gap
        missing = getattr(embedder, "missing_extra", None)
        reason = missing() if missing else None
        self.missing = f"coherence: skipped: {reason}" if reason else ""
        """Why the embedder cannot run here (an optional package is absent); '' when it can."""

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """The skip notice, once per run rather than once per document."""
        return [self.missing] if self.missing else []

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Embed the summary's sentences in one call; average the similarity of each gap pair."""
        if self.missing:
            return MetricResult(values={"coherence": math.nan, "pairs": 0.0}, notes=(self.missing,))
        sentences = split_sentences(summary)
        if len(sentences) < self.gap + 1:
            note = (
                f"coherence: the summary has {len(sentences)} sentences; "
                f"needs at least {self.gap + 1}"
            )
            return MetricResult(values={"coherence": math.nan, "pairs": 0.0}, notes=(note,))
        vectors = self.embedder.embed(sentences, purpose="coherence")
        n = len(sentences) - self.gap
        found = [cosine(vectors[i], vectors[i + self.gap]) for i in range(n)]
        similarities = [s for s in found if not math.isnan(s)]
        values = {
            "coherence": sum(similarities) / len(similarities) if similarities else math.nan,
            "pairs": float(len(similarities)),
        }
        pairs = [  # None, not NaN: the artifact is JSON
            {"i": i, "j": i + self.gap, "similarity": None if math.isnan(s) else s}
            for i, s in enumerate(found)
        ]
        notes = _notes(len(found), len(similarities))
        return MetricResult(values=values, artifacts={ARTIFACT: pairs}, notes=notes)


def setup(embedder: Embedder, *, gap: int = 2) -> Coherence:
    """The metric for a job: ``gap`` is the sentence distance compared (2 in the source)."""
    if not isinstance(gap, int) or isinstance(gap, bool) or gap < 1:
        raise ConfigError(
            f"metrics.coherence.gap={gap} must be a whole number >= 1 (the source uses 2)"
        )
    return Coherence(embedder, gap)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """a.b / (|a| |b|); NaN when either vector is all zeros (no direction to compare)."""
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if norms == 0.0:
        return math.nan
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms


def _notes(pairs: int, kept: int) -> tuple[str, ...]:
    if kept == pairs:
        return ()
    left_out = pairs - kept
    return (f"coherence: {left_out} of {pairs} pairs left out: a sentence has a zero vector",)
