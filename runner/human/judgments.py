"""Human judgments as plain values: what a person said about a summary, or about a pair.

Five kinds, one per kind of study in the seed papers, the metrics article and the
faithfulness releases:

- ``CoherenceAnnotation``: one annotator's span annotation of one summary (spans with
  questions and labels, and relations between two spans), in the format of the metric that
  owns it (``runner.api.human_format``: the plugin API, since a metric reads them);
- ``Preference``: one pairwise comparison (Table 4: detail, structure, logic, overall
  preference; contradiction and omission flags);
- ``Verdict``: a validator's verdict on one annotation (Appendix J; ``runner.api.human_format``'s
  ``Validation``, since the BooookScore metric's meta tables read them);
- ``Rating``: a per-document score or label from any other tool (Likert ratings...);
- ``ClaimsJudgment``: one person's faithfulness judgment of one summary (its label, and each
  claim's or sentence's label against the source; ``runner.api.human_format``, read by a metric's
  ``HUMAN_FILES``).

Every judgment names its document and the system(s) judged: an MLflow run id, or the name
of a system of ``data=summaries`` (``hier``, ``inc``...). Readers build these values from
files; the tracking side stores them as JSON lines (``to_record``/``from_record``) in a
human run's ``human/judgments.jsonl`` so the report reads them back from MLflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runner.api.human_format import (
    CLAIM_LABELS,
    ClaimLabel,
    ClaimsJudgment,
    CoherenceAnnotation,
    HumanDataError,
    Rating,
    Relation,
    Span,
)
from runner.api.human_format import VERDICTS as VERDICTS
from runner.api.human_format import Validation as Verdict

__all__ = [  # the plugin API's
    "CLAIM_LABELS",
    "ClaimLabel",
    "ClaimsJudgment",
    "CoherenceAnnotation",
    "HumanDataError",
    "Rating",
    "Relation",
    "Span",
    "VERDICTS",
    "Verdict",
]

CRITERIA: tuple[str, ...] = ("detail", "structure", "logic", "preference")
"""Pairwise criteria answered ``Summary 1 | Summary 2 | Draw`` (Table 4; ``preference`` is
the overall one)."""
SIDE_CHOICES: tuple[str, ...] = ("Summary 1", "Summary 2", "Draw")
"""The choices of a pairwise criterion as the annotator sees them."""
DRAW = "draw"
"""A pairwise criterion with no winner."""


@dataclass(frozen=True)
class Preference:
    """One pairwise comparison of two summaries of the same document."""

    doc_id: str
    systems: tuple[str, str]
    """The systems of "Summary 1" and "Summary 2", in the order the annotator saw them."""
    annotator: str
    choices: dict[str, str]
    """Criterion (``CRITERIA``) -> the preferred system, or ``DRAW``."""
    flags: dict[str, bool] = field(default_factory=dict)
    """``contradiction`` and ``omission:<system>`` -> the annotator's Yes/No."""
    comments: dict[str, str] = field(default_factory=dict)
    """Criterion -> the annotator's free text."""


Judgment = CoherenceAnnotation | Preference | Verdict | Rating | ClaimsJudgment
_KINDS: dict[str, type] = {
    "coherence": CoherenceAnnotation,
    "preference": Preference,
    "verdict": Verdict,
    "rating": Rating,
    "claims": ClaimsJudgment,
}


def kind_of(judgment: Judgment) -> str:
    """``coherence``, ``preference``, ``verdict``, ``rating`` or ``claims``."""
    return next(k for k, cls in _KINDS.items() if isinstance(judgment, cls))


def to_record(judgment: Judgment) -> dict[str, Any]:
    """A JSON-ready dict with its ``kind`` (one line of ``human/judgments.jsonl``).

    An annotation of the built-in owner (``metric`` empty) is written without ``metric``,
    as before owners were named, so its content identity is unchanged.
    """
    record = {"kind": kind_of(judgment), **asdict(judgment)}
    if record.get("metric") == "":
        del record["metric"]
    return record


def from_record(record: dict[str, Any]) -> Judgment:
    """The judgment ``to_record`` wrote."""
    data = dict(record)
    kind = data.pop("kind", None)
    if kind == "coherence":
        data["singles"] = tuple(_span(s) for s in data.get("singles", ()))
        data["relations"] = tuple(
            Relation(_span(r["first"]), _span(r["second"]), r["questions"], tuple(r["labels"]))
            for r in data.get("relations", ())
        )
        return CoherenceAnnotation(**data)
    if kind == "preference":
        data["systems"] = tuple(data["systems"])
        return Preference(**data)
    if kind == "verdict":
        return Verdict(**data)
    if kind == "rating":
        return Rating(**data)
    if kind == "claims":
        data["claims"] = tuple(_claim(c) for c in data.get("claims", ()))
        return ClaimsJudgment(**data)
    raise HumanDataError(f"a stored judgment has kind={kind!r}; expected one of {list(_KINDS)}")


def _span(raw: dict[str, Any]) -> Span:
    return Span(raw["text"], raw.get("questions", ""), tuple(raw.get("labels", ())))


def _claim(raw: dict[str, Any]) -> ClaimLabel:
    return ClaimLabel(
        int(raw["index"]),
        raw["text"],
        raw["label"],
        tuple(raw.get("evidence", ())),
        raw.get("reason", ""),
    )


def check_claim_labels(judgments: Sequence[Judgment], source: Path | str) -> None:
    """``HumanDataError`` (one line) for the first claim label outside ``CLAIM_LABELS``.

    Checked before anything is recorded: an unknown label would be counted as "not
    supported" and silently lower the summary's share of supported claims.
    """
    for judgment in judgments:
        if not isinstance(judgment, ClaimsJudgment):
            continue
        for claim in judgment.claims:
            if claim.label not in CLAIM_LABELS:
                raise HumanDataError(
                    f"{source}: {judgment.doc_id}, {judgment.unit} {claim.index}: label "
                    f"{claim.label!r} is not one of {', '.join(CLAIM_LABELS)}; fix the label"
                )
