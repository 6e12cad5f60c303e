"""Strategy ``none``: no summarizing; the data brings summaries made elsewhere.

Used with ``data=summaries`` (``{doc_id: summary}`` JSON, the BooookScore authors' format),
so that another system's or the paper's released summaries are scored by the same
metrics. The runner takes a summary the data gives as is and never calls this function
for it; ``summarize`` is reached only when a document has no summary, which is a data
mistake, not something to paper over.
"""

from __future__ import annotations

from runner.api import Chunk, DataError, StrategyResult

ROLES: tuple[str, ...] = ()
"""No model: nothing is generated."""
PROMPT_DIRS = ("none", "common")
"""Its folders under ``strategies/prompts/``: logged and hashed into the fingerprint."""
IGNORES = {
    "chunk": "strategy=none scores summaries made elsewhere",
    "temperature": "strategy=none calls no summarizer",
}
"""Run-level keys this strategy does not use, and why."""


def summarize(chunks: list[Chunk]) -> StrategyResult:
    """Refuse: ``strategy=none`` only scores summaries the data provides."""
    raise DataError(
        "strategy=none has no summary for this document; give data=summaries data.path=FILE.json, "
        "or choose a strategy that summarizes (baseline, hier, incremental)"
    )
