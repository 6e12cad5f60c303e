"""The faithfulness judge's verdicts on a document's trace (``Metric.verdicts``).

One ``faithfulness/claim`` verdict per claim asked about (value ``supported`` or
``unsupported``: the words of people's claim labels, ``runner.api.CLAIM_LABELS``, so the
Traces tab counts the judge's and people's values side by side; rationale the judge's
answer; metadata the claim, its index and the passages it was shown) and one
``faithfulness/faithful`` verdict per summary: the names people's labels are recorded
under on the same trace. An undecided answer gets no verdict (the run's notes list it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from runner.api import CLAIM_LABELS, MetricResult, Verdict

ARTIFACT = "claims.json"
"""Per-claim answers of the claims method: ``{doc_id: [row, ...]}``."""
ANSWERS = "answers.json"
"""The summary-level answer of the binary and cot methods: ``{doc_id: {...}}``."""
CLAIM = "faithfulness/claim"
FAITHFUL = "faithfulness/faithful"
SUPPORTED, UNSUPPORTED = CLAIM_LABELS[0], CLAIM_LABELS[2]
"""A claim the judge answered True / False, in people's words."""


def on_trace(result: MetricResult) -> list[Verdict]:
    """Every decided claim's verdict, then the summary's (when it is decided)."""
    rows: Sequence[Mapping[str, Any]] = result.artifacts.get(ARTIFACT) or ()
    out = [_claim(row) for row in rows if row.get("supported") is not None]
    faithful = result.values.get("faithful", math.nan)
    if not math.isnan(faithful):
        out.append(Verdict(FAITHFUL, bool(faithful), rationale=_why(result, rows)))
    return out


def _claim(row: Mapping[str, Any]) -> Verdict:
    passages = row.get("passages")
    metadata = {
        "claim": str(row["claim"]),
        "index": str(row["index"]),
        "passages": passages if isinstance(passages, str) else json.dumps(passages),
    }
    label = SUPPORTED if row["supported"] else UNSUPPORTED
    return Verdict(CLAIM, label, rationale=str(row["answer"]), metadata=metadata)


def _why(result: MetricResult, rows: Sequence[Mapping[str, Any]]) -> str:
    if rows:
        yes = sum(1 for r in rows if r.get("supported") is True)
        return f"{yes} of {len(rows)} claims supported"
    said: Mapping[str, Any] = result.artifacts.get(ANSWERS) or {}
    reasoning = str(said.get("reasoning") or "")
    answer = str(said.get("answer") or "")
    return f"{reasoning}\n\n{answer}".strip() if reasoning else answer
