"""BooookScore's verdicts on a document's trace: one per flagged sentence, and the score.

The job writes them as the judge's assessments on the document's trace (``Metric.verdicts``),
so the MLflow Traces tab shows which sentences the judge flagged and why, beside the people's
verdicts under the same names (``runner/human`` records those).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.api import MetricResult, Verdict

COHERENCE_ERROR = "coherence_error"
"""Name of a flagged sentence's verdict: value the error type(s), rationale the questions."""
SCORE = "booookscore"
"""Name of a summary's score verdict: the share of sentences without an error (0-100)."""


def on_trace(result: MetricResult, artifact: str) -> list[Verdict]:
    """The judge's verdicts of one BooookScore result (``artifact``: its per-sentence file).

    Sentences judged "no confusion" get none (the score says how many there were); an
    unreadable answer gets none either (the run's notes list it); an unjudged summary (NaN
    score) gets no score verdict.
    """
    sentences: Mapping[str, Any] = result.artifacts.get(artifact) or {}
    out = []
    for sentence, said in sentences.items():
        if said.get("unparsed") or said.get("questions") is None:
            continue
        types = ", ".join(said.get("types") or ()) or "unlabeled"
        out.append(
            Verdict(
                COHERENCE_ERROR,
                types,
                rationale=str(said["questions"]),
                metadata={"sentence": sentence},
            )
        )
    score = result.values.get("score")
    if score is not None and score == score:  # NaN: the summary could not be judged
        judged = result.values.get("judged_sentences", 0.0)
        confused = result.values.get("confused_sentences", 0.0)
        rationale = f"{confused:.0f} of {judged:.0f} judged sentences flagged"
        out.append(Verdict(SCORE, float(score), rationale=rationale))
    return out
