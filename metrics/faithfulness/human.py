"""People's faithfulness labels in StorySumm's and FABLES' releases, as ``ClaimsJudgment`` values.

``HUMAN_FILES`` is the metric's hook (``runner.api.HumanFile``): ``python -m runner.annotate
import FILE`` asks each format whether it recognizes a file by its shape and reads it with
the one that does. StorySumm gives each summary's final label, its difficulty and per-sentence
labels with explanations; FABLES gives per-claim labels with evidence and reasons, and no
summary label.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from metrics.faithfulness.releases import (
    FABLES_TO_CLAIM_LABEL,
    FablesSummary,
    StorySummEntry,
    fables_json,
    parse_storysumm_json,
    read_fables,
    read_storysumm,
)
from runner.api import ClaimLabel, ClaimsJudgment, HumanDataError, HumanFile

METRIC = "faithfulness"
"""The metric that owns these judgments (its entry point's name)."""
_STORYSUMM_SHAPE = ("story", "summary", "label")


def recognizes_storysumm(path: Path) -> bool:
    """A JSON object whose values are summaries with a story, a summary and a label."""
    try:
        if zipfile.is_zipfile(path):
            return False
        data, _ = parse_storysumm_json(path.read_text(encoding="utf-8"), path.name)
    except Exception:  # noqa: BLE001 - any file that is not this format is simply not it
        return False
    if not isinstance(data, dict) or not data:
        return False
    return all(isinstance(v, dict) and all(f in v for f in _STORYSUMM_SHAPE) for v in data.values())


def recognizes_fables(path: Path) -> bool:
    """A zip holding FABLES.json, or a JSON object with a ``FABLES`` object."""
    try:
        fables_json(path, HumanDataError)
    except Exception:  # noqa: BLE001 - any file that is not this format is simply not it
        return False
    return True


def read_storysumm_judgments(path: Path) -> tuple[list[ClaimsJudgment], list[str]]:
    """One judgment per summary: the release's final label and its sentences' labels."""
    entries, notes = read_storysumm(path, HumanDataError)
    judgments = []
    for entry in entries:
        judgment, more = storysumm_judgment(entry)
        judgments.append(judgment)
        notes.extend(more)
    return judgments, notes


def storysumm_judgment(entry: StorySummEntry) -> tuple[ClaimsJudgment, list[str]]:
    """``entry`` as a judgment, with a note for what cannot be aligned.

    A sentence is ``supported`` (error 1) or ``unsupported`` (error 0); the explanations,
    one per unsupported sentence in order, become those sentences' reasons. When the counts
    differ no reason is attached (attaching in order could pin one on the wrong sentence),
    and a sentence without an error value gets no label; each is said in a note.
    """
    notes = []
    wrong = [i for i, e in enumerate(entry.errors) if e == 0]
    reasons = dict(zip(wrong, entry.explanations, strict=False))
    if len(wrong) != len(entry.explanations):
        reasons = {}
        notes.append(
            f"StorySumm {entry.key}: {len(wrong)} inconsistent sentences but "
            f"{len(entry.explanations)} explanations; explanations not attached"
        )
    if len(entry.errors) != len(entry.sentences):
        notes.append(
            f"StorySumm {entry.key}: {len(entry.sentences)} sentences but "
            f"{len(entry.errors)} sentence labels; only the first {len(entry.errors)} are labelled"
        )
    claims = tuple(
        ClaimLabel(
            index=i,
            text=sentence,
            label="supported" if error == 1 else "unsupported",
            reason=reasons.get(i, ""),
        )
        for i, (sentence, error) in enumerate(zip(entry.sentences, entry.errors, strict=False))
    )
    judgment = ClaimsJudgment(
        doc_id=entry.key,
        system=entry.model,
        annotator="storysumm",
        summary=entry.summary,
        faithful=entry.label == 1,
        difficulty=entry.difficulty,
        claims=claims,
        unit="sentence",
        metric=METRIC,
    )
    return judgment, notes


def read_fables_judgments(path: Path) -> tuple[list[ClaimsJudgment], list[str]]:
    """One judgment per summary: its claims' labels, evidence and reasons."""
    return [fables_judgment(s) for s in read_fables(path, HumanDataError)], []


def fables_judgment(summary: FablesSummary) -> ClaimsJudgment:
    """``summary`` as a judgment: FABLES gives no summary label, so ``faithful`` is None.

    A claim's reasons (one per evidence quote, often empty) are joined one per line.
    """
    return ClaimsJudgment(
        doc_id=summary.doc_id,
        system=summary.model,
        annotator="fables",
        summary=summary.summary,
        faithful=None,
        claims=tuple(
            ClaimLabel(
                index=i,
                text=c.claim,
                label=FABLES_TO_CLAIM_LABEL[c.label],
                evidence=c.evidence,
                reason="\n".join(r.strip() for r in c.reason if r.strip()),
            )
            for i, c in enumerate(summary.claims)
        ),
        unit="claim",
        metric=METRIC,
    )


HUMAN_FILES: tuple[HumanFile, ...] = (
    HumanFile("StorySumm release", recognizes_storysumm, read_storysumm_judgments),
    HumanFile("FABLES release", recognizes_fables, read_fables_judgments),
)
"""The release formats of people's faithfulness labels this metric reads."""
