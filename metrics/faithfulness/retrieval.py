"""What the judge is shown of the source for one claim: all of it, or passages for the claim.

A story fits the judge's window and is given whole (logged as ``"whole"``). A book does not:
its text is cut into chunks (``runner.api.chunking``, at most ``chunk_tokens`` each) and every
claim is judged against the chunks Okapi BM25 ranks best for it that fit the room left
(``runner.api.retrieval``, the article metrics' index); the chosen chunks' indices, best
first, are logged with the claim. BM25 is the only retriever: the runner has no optional
model roles, and declaring the ``embedder`` role would make every faithfulness run load
and fingerprint an embedder it does not use.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.api import Chunk, ConfigError, split_into_chunks
from runner.api.retrieval import BM25, excerpt, pick_chunks

RETRIEVERS = ("bm25",)
WHOLE = "whole"
"""The passages logged for a claim shown the whole source."""


@dataclass(frozen=True)
class Source:
    """The source as the judge sees it: whole, or BM25-picked chunks per claim."""

    text: str
    chunks: list[Chunk] | None
    index: BM25 | None
    budget: int

    @property
    def whole(self) -> bool:
        """True when every claim is shown the whole source."""
        return self.chunks is None

    def for_claim(self, claim: str) -> tuple[str, list[int] | str]:
        """The text shown with ``claim`` and its chunk indices, best first (or ``"whole"``)."""
        if self.chunks is None or self.index is None:
            return self.text, WHOLE
        chosen = pick_chunks(self.chunks, self.index.rank(claim), self.budget)
        return excerpt(self.chunks, chosen), chosen


def prepare(text: str, tokens: int, budget: int, chunk_tokens: int) -> Source:
    """The whole ``text`` when its ``tokens`` fit ``budget``, else its chunks indexed."""
    if tokens <= budget:
        return Source(text, None, None, budget)
    chunks = split_into_chunks(text, min(chunk_tokens, budget))
    return Source(text, chunks, BM25([c.text for c in chunks]), budget)


def check_retrieval(retrieval: str) -> None:
    """``bm25`` (the one retriever), else a one-line ConfigError saying why."""
    if retrieval == "embedder":
        raise ConfigError(
            "metrics.faithfulness.retrieval=embedder is not available (the runner has no "
            "optional model roles); use metrics.faithfulness.retrieval=bm25"
        )
    if retrieval not in RETRIEVERS:
        raise ConfigError(
            f"metrics.faithfulness.retrieval={retrieval} is not a retriever; use "
            "metrics.faithfulness.retrieval=bm25"
        )
