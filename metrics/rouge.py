"""ROUGE-1/2/L F1 against the document's reference summaries (Google's ``rouge-score``).

The reference implementation of the summarization literature re-implemented in Python
(Lin 2004; ``rouge_score.rouge_scorer``), with its own tokenizer: lowercase, every character
other than a-z and 0-9 separates words (so non-ASCII letters are dropped: "café" -> "caf"),
and, with ``use_stemmer``, NLTK's Porter stemmer on words longer than three characters. That
tokenizer downloads nothing (the stemmer is rules in code; ``nltk.sent_tokenize``, which needs
Punkt data, is used only for ``rougeLsum`` with ``split_summaries``, which we never set).

Several references: each ROUGE type takes the **maximum** F1 over the references, each type
separately (``RougeScorer.score_multi``'s rule). References written independently differ in
what they cover and how they word it; a summary close to any one of them is a good summary,
and the mean would penalise it for not resembling all of them at once, so the max is the
multi-reference convention. ``references`` records how many there were, since the max rises
with their number and scores over different reference counts are not comparable.

No references (``data=sample``, ``data=summaries``, ``data=dir`` without ``data.references``):
NaN values with a note per document, and a run-level warning when no document had any.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from runner.api import ConfigError, Document, Metric, MetricResult, Value

ROLES: tuple[str, ...] = ()
PROMPT_DIRS = ("rouge",)
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
DEFAULT_TYPES = ["rouge1", "rouge2", "rougeL"]
_TYPE = re.compile(r"rouge[1-9]|rougeL|rougeLsum")
INSTALL = "metrics.rouge needs the rouge-score package: pip install -e '.[reference]'"
SKIPPED = (
    "rouge: skipped: the data has no reference summaries (give them with data=dir "
    "data.references=FOLDER of <doc_id>.txt files, or data=hf data.reference_field=COLUMN)"
)


class Rouge(Metric):
    """ROUGE F1 per type, maximum over the document's references."""

    def __init__(self, scorer: Any, rouge_types: list[str]) -> None:
        """Keep the built scorer (stateless, so documents may be scored concurrently)."""
        self.scorer = scorer
        self.rouge_types = rouge_types
        self.headline = tuple(rouge_types)
        self.values = {
            t: Value(
                title=f"ROUGE-{t.removeprefix('rouge').upper()} F1", range=(0, 1), better="higher"
            )
            for t in rouge_types
        }

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """F1 of each ROUGE type against the best-matching reference, and the reference count."""
        references = document.references if document is not None else ()
        if not references:
            values = {t: math.nan for t in self.rouge_types}
            return MetricResult(values={**values, "references": 0.0}, notes=(SKIPPED,))
        per_reference = [self.scorer.score(ref, summary) for ref in references]
        values = {t: max(s[t].fmeasure for s in per_reference) for t in self.rouge_types}
        return MetricResult(values={**values, "references": float(len(references))})

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """Say so when no document had references: every ROUGE value of the run is NaN."""
        had = [r for r in per_document.values() if r.values.get("references", 0.0) > 0]
        if per_document and not had:
            return [
                "rouge: no document had reference summaries, so every ROUGE value is NaN. "
                f"{SKIPPED}"
            ]
        return []


def setup(*, rouge_types: list[str] = DEFAULT_TYPES, use_stemmer: bool = True) -> Rouge:
    """Check the types and build the scorer once (``rouge_score`` imported only here).

    The default list is never mutated (a copy is kept); it is a list, like the YAML value.
    """
    types = list(rouge_types)
    bad = [t for t in types if not isinstance(t, str) or not _TYPE.fullmatch(t)]
    if not types or bad:
        raise ConfigError(
            f"metrics.rouge.rouge_types={types}: use rouge1..rouge9, rougeL or rougeLsum, "
            "e.g. [rouge1,rougeL]"
        )
    try:
        from rouge_score import rouge_scorer
    except ImportError as err:
        raise ConfigError(INSTALL) from err
    return Rouge(rouge_scorer.RougeScorer(types, use_stemmer=bool(use_stemmer)), types)
