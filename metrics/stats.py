"""Summary statistics of the BooookScore paper's Table 2 (no model calls).

Tokenization for n-grams: lowercase, punctuation removed: word tokens are runs of Unicode
letters and digits (so "café" and "naïve" stay whole), an apostrophe inside a word is kept
("don't", and "don’t" with a typographic apostrophe, are both the one word "don't"), and
every other character (hyphens, dashes, quotes, brackets) separates words. Length is
counted in tiktoken cl100k_base tokens, the paper's measure.

- % novel trigrams: summary word trigrams absent from the source / all summary trigrams.
- % repeated trigrams: summary trigram occurrences whose trigram occurs more than once in
  the summary / all summary trigrams.
"""

from __future__ import annotations

import math
from collections import Counter

from runner.api import (
    Document,
    Metric,
    MetricResult,
    Value,
    count_tokens,
    split_sentences,
    words,
)

ROLES: tuple[str, ...] = ()
PROMPT_DIRS = ("stats",)
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
VALUES = {
    "length_tokens": Value(title="Avg length (tokens)", kind="count"),
    "novel_trigrams_pct": Value(title="% novel trigrams", range=(0, 100)),
    "repeated_trigrams_pct": Value(title="% repeated trigrams", range=(0, 100), better="lower"),
    "words": Value(title="Words", kind="count"),
    "sentences": Value(title="Sentences", kind="count"),
}
"""Table 2's titles. A summary's length and its share of novel trigrams are neither better
high nor low (abstractiveness is a trait, not a quality); repetition is worse."""


def trigrams(tokens: list[str]) -> list[tuple[str, str, str]]:
    """Consecutive word trigrams."""
    return list(zip(tokens, tokens[1:], tokens[2:], strict=False))  # shifted: ends differ


class Stats(Metric):
    """No parameters, no model: the Table 2 statistics."""

    headline = ("length_tokens", "novel_trigrams_pct", "repeated_trigrams_pct")

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """See ``score``."""
        return score(document, summary)


def setup() -> Stats:
    """The metric for a job (nothing to load)."""
    return Stats()


def score(document: Document | None, summary: str) -> MetricResult:
    """Length, words, sentences, % novel and % repeated trigrams of ``summary``."""
    summary_words = words(summary)
    grams = trigrams(summary_words)
    counts = Counter(grams)
    values = {
        "length_tokens": float(count_tokens(summary)),
        "words": float(len(summary_words)),
        "sentences": float(len(split_sentences(summary))),
        "repeated_trigrams_pct": _pct(sum(n for n in counts.values() if n > 1), len(grams)),
    }
    notes: list[str] = []
    if not grams:
        notes.append("stats: the summary has fewer than three words; trigram percentages are NaN")
    if document is not None:
        source = set(trigrams(words(document.text)))
        values["novel_trigrams_pct"] = _pct(sum(1 for g in grams if g not in source), len(grams))
    else:  # a headline value is always given: NaN, which no table averages, when undecidable
        values["novel_trigrams_pct"] = math.nan
        notes.append("stats: novel_trigrams_pct skipped: no source document (data=none)")
    return MetricResult(values=values, notes=tuple(notes))


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else math.nan
