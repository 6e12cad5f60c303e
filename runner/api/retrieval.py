"""Okapi BM25 over a document's chunks, and the chunks a claim is judged against.

``runner.api.retrieval``: part of the plugin API (versioned with ``runner.api``).

Why BM25 and not embeddings: alignment must work with only the ``judge`` role, offline and
deterministically; a claim usually repeats the source's rare words (names, numbers), which
is exactly what BM25 rewards. The scoring is Robertson's Okapi BM25 with Lucene's
non-negative idf::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(D, Q) = sum over distinct t in Q of
                  idf(t) * tf(t, D) * (k1 + 1) / (tf(t, D) + k1 * (1 - b + b * |D| / avgdl))

with k1 = 1.5, b = 0.75, tokens = ``runner.api.text.words`` (lowercased letters/digits, no
stemming, no stop list: idf already makes "the" worth almost nothing). Ties rank the
earlier chunk first, so the ranking is fully deterministic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from runner.api.text import words
from runner.api.types import Chunk

K1 = 1.5
B = 0.75
SEPARATOR = "\n\n[...]\n\n"
"""Between non-adjacent excerpts shown to the judge, so it does not read them as one passage."""
JOIN_COST = 4
"""Upper bound on the tokens one join adds: the separator is 3 cl100k tokens, plus one of BPE
slack (a constant, so importing the metric loads no tokenizer; a test checks it)."""


class BM25:
    """An index over tokenized texts; ``rank(query)`` gives their indices, best first."""

    def __init__(self, texts: Sequence[str], k1: float = K1, b: float = B):
        """Count terms once, so each query costs one pass over the counts."""
        self.k1, self.b = k1, b
        self.tf = [Counter(words(t)) for t in texts]
        self.lengths = [sum(tf.values()) for tf in self.tf]
        self.avgdl = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df = Counter(term for tf in self.tf for term in tf)
        n = len(self.tf)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def scores(self, query: str) -> list[float]:
        """BM25 score of every text for ``query`` (0 where no term is shared)."""
        terms = set(words(query))
        out = []
        for tf, length in zip(self.tf, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self.avgdl) if self.avgdl else self.k1
            out.append(
                sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in terms if t in tf)
            )
        return out

    def rank(self, query: str) -> list[int]:
        """Indices by descending score, the earlier index first on ties."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def pick_chunks(chunks: Sequence[Chunk], order: Sequence[int], budget: int) -> list[int]:
    """The best-ranked chunks, in rank order, whose excerpt fits ``budget`` tokens.

    A chunk that would overflow is skipped and the next one tried, so the budget is
    filled with the most relevant chunks that fit; the best chunk is always taken (the
    chunks are cut to fit the budget, see ``alignment``). The excerpt's size is bounded
    from the chunks' exact counts plus, per join, a separator and one token of BPE slack
    (``runner.api.chunking``'s ``_JOIN_SLACK``), so no text is re-tokenized per claim.
    """
    chosen: list[int] = []
    used = 0
    smallest = min((c.n_tokens for c in chunks), default=0)
    for index in order:
        cost = chunks[index].n_tokens + (JOIN_COST if chosen else 0)
        if chosen and used + cost > budget:
            if budget - used < smallest + JOIN_COST:
                break
            continue
        chosen.append(index)
        used += cost
    return chosen


def excerpt(chunks: Sequence[Chunk], indices: Sequence[int]) -> str:
    """The chosen chunks in document order, separated where they are not adjacent."""
    parts: list[str] = []
    previous = None
    for i in sorted(indices):
        if previous is not None and i != previous + 1:
            parts.append(SEPARATOR)
        parts.append(chunks[i].text)
        previous = i
    return "".join(parts).strip()
