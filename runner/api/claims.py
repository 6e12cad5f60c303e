"""Atomic claims of a summary: the check of a judge's claim list, the grounding test.

``runner.api.claims``: part of the plugin API (versioned with ``runner.api``). The check of
the judge's JSON answer to a claim-extraction prompt, and the test that a claim restates the
summary.

Shared by the alignment metric (seed 003) and the faithfulness metric's claims rater
(FABLES), which extracts claims the same way when the data gives none (with the prompt
``metrics.CLAIMS_PROMPT``), so that neither metric imports the other.
"""

from __future__ import annotations

from typing import Any

from runner.api.asking import as_text
from runner.api.judging import as_list, key_of
from runner.api.text import words


def check_claims(data: Any) -> tuple[Any, str]:
    """A list of claim strings (bare, or objects with a 'claim' key) under 'claims'."""
    items = as_list(data, "claims")
    if items is None:
        return None, "expected a JSON object with the key 'claims' holding a list of strings"
    claims = [
        as_text(key_of(item, "claim", "text") if isinstance(item, dict) else item) for item in items
    ]
    return [c for c in claims if c], ""


def grounded(claim: str, summary: str) -> bool:
    """True when most of the claim's content words (4+ letters) occur in the summary.

    A claim extracted from the summary restates it, so its content words are there; a claim
    that shares few of them was invented by the judge (small models copy the prompt's
    example), and judging it against the source would score the judge, not the summary.
    """
    content = [w for w in words(claim) if len(w) >= 4]
    if not content:
        return True
    present = set(words(summary))
    return sum(w in present for w in content) >= len(content) / 2
