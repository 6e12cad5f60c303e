"""Metric ``compression``: how much shorter the summary is than its document.

- ``word_ratio``: whitespace-separated words of the summary / of the document;
- ``token_ratio``: cl100k_base tokens of the summary / of the document (``count_tokens``).

No model and no parameters. It imports only ``runner.api``, the plugin API.
"""

from __future__ import annotations

import math

from runner.api import Document, Metric, MetricResult, count_tokens

ROLES: tuple[str, ...] = ()
"""No model role (a judged metric declares ``("judge",)`` and takes ``judge`` in ``setup``)."""
PROMPT_DIRS: tuple[str, ...] = ()
"""No prompts."""


class Compression(Metric):
    """Summary length over document length, per document; the runner averages them."""

    headline = ("word_ratio", "token_ratio")

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Both ratios; NaN with a note when the data gives no source document."""
        if document is None:
            return MetricResult(
                values={"word_ratio": math.nan, "token_ratio": math.nan},
                notes=("compression: no source document to compare with (data=none)",),
            )
        return MetricResult(
            values={
                "word_ratio": _ratio(len(summary.split()), len(document.text.split())),
                "token_ratio": _ratio(count_tokens(summary), count_tokens(document.text)),
            }
        )


def setup() -> Compression:
    """The metric for a job (nothing to load)."""
    return Compression()


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else math.nan
