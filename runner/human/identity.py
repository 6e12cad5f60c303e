"""What makes two sets of human judgments the same, so that none is counted twice.

A human run carries the content identity of its judgments (tag ``human.identity``: a hash of
the judgments, in any order, and of their annotators), so recording what the store already
holds finds the earlier run instead of adding a second (``record_human_run``). Judgments that
overlap only in part (an export recorded, then a larger one with the same answers) are found
per judgment: ``judgment_key`` names one annotator's answer to one question about one item,
which the meta-evaluation counts once however many human runs hold it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timezone

from runner.human.judgments import (
    ClaimsJudgment,
    CoherenceAnnotation,
    Judgment,
    Preference,
    Verdict,
    kind_of,
    to_record,
)
from runner.tracking.reader import RunRecord, experiment_id, find_tagged

IDENTITY_TAG = "human.identity"


def content_identity(judgments: Sequence[Judgment]) -> str:
    """A hash of the judgments (order-free) and their annotators: equal for a re-import."""
    lines = sorted(json.dumps(to_record(j), sort_keys=True, ensure_ascii=False) for j in judgments)
    annotators = sorted({j.annotator for j in judgments})
    text = json.dumps({"annotators": annotators, "judgments": lines}, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def recorded_run(uri: str, identity: str, experiment: str | None = None) -> RunRecord | None:
    """The newest FINISHED human run holding exactly these judgments, if any.

    Anywhere in the store, or in ``experiment`` when it is given.
    """
    found = find_tagged(uri, IDENTITY_TAG, identity)
    if experiment is not None:
        wanted = experiment_id(uri, experiment)
        found = [run for run in found if run.experiment_id == wanted]
    return found[0] if found else None


def when(run: RunRecord) -> str:
    """The run's start as UTC ``YYYY-MM-DD HH:MM``, for a message."""
    return datetime.fromtimestamp(run.start_time / 1000, timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC"
    )


def judgment_key(judgment: Judgment) -> str:
    """One annotator's answer to one question about one item, as a comparable string.

    Item and question per kind: a summary's coherence annotation (system, document); a
    comparison of a pair (document, the two systems in either order; its criteria are
    answered together); a verdict on one annotation (document, source, the annotation); a
    rating (document, system, criterion); a faithfulness judgment of a summary (system,
    document, the metric owning the format; its label and claim labels are answered
    together). Without an annotator's name two people cannot be
    told apart, so only an identical judgment is the same one.
    """
    kind = kind_of(judgment)
    if not judgment.annotator:
        return json.dumps([kind, to_record(judgment)], sort_keys=True, ensure_ascii=False)
    item: list[object]
    if isinstance(judgment, CoherenceAnnotation):
        item = [judgment.system, judgment.doc_id]
    elif isinstance(judgment, Preference):
        item = [judgment.doc_id, sorted(judgment.systems)]
    elif isinstance(judgment, ClaimsJudgment):
        item = [judgment.system, judgment.doc_id, judgment.metric]
    elif isinstance(judgment, Verdict):
        item = [judgment.doc_id, judgment.source, judgment.annotation]
    else:
        item = [judgment.doc_id, judgment.system, judgment.criterion]
    return json.dumps([kind, judgment.annotator, item], sort_keys=True, ensure_ascii=False)
