"""People's judgments as an MLflow run, and as HUMAN assessments on the judged documents' traces.

The human run (issue 23, contract 2) sits in the experiment of the runs judged, so the runs
table compares "BooookScore (human)" with the judge's: tags ``runner.kind=human``,
``human.kinds``, ``human.source``, ``human.annotators``, ``human.identity`` (the judgments'
content, ``runner.human.identity``) and ``human.judged_run`` (when every judged summary comes
from one run, whose ``strategy``, ``model``, ``model.model``, ``chunk`` and ``data`` params
it copies); params ``judge=human``, ``judge.model=human``; the judgments
as ``human/judgments.jsonl``; for span annotations the values of the metric that owns
their format (``runner.human.owner``; its ``HUMAN.values``, e.g. BooookScore's ``score``,
``sentences``, ``confused_sentences``, ``type/<label>``) under the metric's name, as run
metrics and per document in ``scores.json`` and ``scores_table.json``. Several annotators of
one summary are averaged by the metric, and the run's value is the mean over summaries.

When a judged system is a run with traces, each annotation also goes on that document's
trace as source ``HUMAN`` (``runner/tracking/assessments.py``), beside the judge's verdicts,
under the assessment names the owning metric gives (its judge's names).

Faithfulness judgments (``ClaimsJudgment``) name no run: which runs they judged, their values
and their assessments are ``runner.human.record_claims``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.api.text import split_sentences
from runner.human.identity import IDENTITY_TAG, content_identity, recorded_run
from runner.human.judgments import (
    ClaimsJudgment,
    CoherenceAnnotation,
    HumanDataError,
    Judgment,
    Preference,
    Rating,
    check_claim_labels,
    kind_of,
    to_record,
)
from runner.human.matching import (
    differing_lines,
    faithful_ratings,
    run_summaries,
    skipped_line,
    unknown_documents,
    unknown_line,
)
from runner.human.owner import owner_of
from runner.human.record_claims import (
    claim_values,
    claims_experiment,
    claims_judged,
    log_claims,
)
from runner.tracking.assessments import HUMAN, Feedback, judged_run, log_feedback
from runner.tracking.reader import RunRecord
from runner.tracking.writer import Tracker

JUDGMENTS_FILE = "human/judgments.jsonl"
NOT_COPIED = ("judge", "metrics", "roles")
"""Params of the judged run a human run does not repeat (``judge.*`` included): the human run
has its own judge (``human``). Every other param is repeated, so the human run differs from
the run it judged only by its judge and sits beside it in a report (a param it lacked, such
as ``data.path`` or ``strategy.max_summary_len``, would open rows of its own)."""
_RUN_ID = re.compile(r"[0-9a-f]{32}")
"""A judged system that is a run of the store (an MLflow run id), not a named system."""


@dataclass(frozen=True)
class HumanRun:
    """What ``record_human_run`` wrote."""

    run_id: str
    assessments: int
    """HUMAN assessments written on document traces."""
    untraced: tuple[str, ...]
    """``<run>/<doc_id>`` of judged documents whose run has no trace of them (none written)."""
    already: RunRecord | None = None
    """Set when the store already held these judgments: that run (``run_id``), nothing written."""
    claims_judged: tuple[str, ...] = ()
    """The runs whose documents the faithfulness judgments judged (by doc_id and text)."""
    notes: tuple[str, ...] = ()
    """Lines for the screen: judgments skipped (``matched_only``), summaries no run matches."""


def record_human_run(
    tracking_uri: str,
    experiment: str | None,
    judgments: Sequence[Judgment],
    source_file: Path | str,
    *,
    artifact_root: Path | None = None,
    force: bool = False,
    matched_only: bool = False,
) -> HumanRun:
    """Write the human run of ``judgments`` (read from ``source_file``) and their assessments.

    ``experiment`` None: the experiment of the judged runs (``summarization`` when only named
    systems are judged; the command checks a name given with ``check_experiment``). A judged
    system that looks like a run id must be a run of this store, and each judgment's
    document one of that run's
    (``unknown_documents``): others are refused, or skipped and counted with
    ``matched_only``. A FINISHED human run with the same judgments (``content_identity``)
    anywhere in the store is returned as ``already`` and nothing is written, unless
    ``force``: recording twice would count every judgment twice.
    """
    if not judgments:
        raise HumanDataError(f"{source_file}: no judgments to record; check the file and its key")
    check_claim_labels(judgments, source_file)
    systems = judged_systems(judgments)
    runs = _judged_runs(tracking_uri, systems, source_file)
    summaries = {run_id: run_summaries(tracking_uri, run_id) for run_id in runs}
    judgments, notes = faithful_ratings(judgments, summaries)
    unknown = unknown_documents(judgments, summaries)
    if unknown:
        if not matched_only:
            raise HumanDataError(unknown_line(source_file, unknown, len(judgments)))
        notes.append(skipped_line(unknown, len(judgments)))
        judgments = [j for j in judgments if not any(j is u for u, _ in unknown)]
        if not judgments:
            raise HumanDataError(f"{source_file}: no judgment names a document of its run")
    claims = [j for j in judgments if isinstance(j, ClaimsJudgment)]
    if experiment is None:
        experiment = next((name for _, name in runs.values()), None)
    named = [record for record, _ in runs.values()]
    if experiment is None:  # no run named: the runs holding the summaries tell (read once)
        experiment, claim_runs = claims_experiment(tracking_uri, claims, source_file)
    else:
        claim_runs = claims_judged(tracking_uri, experiment, claims, source_file, named)
    # Already recorded in this experiment: once is enough. In another one only, its reports
    # cannot see them (a report reads one experiment): record them here too, and say so.
    identity = content_identity(judgments)
    earlier = None if force else recorded_run(tracking_uri, identity)
    here = None if earlier is None else recorded_run(tracking_uri, identity, experiment)
    if here is not None:
        return HumanRun(here.run_id, 0, (), here)
    if earlier is not None:
        notes.append(
            f"these {len(judgments)} judgments are also in another experiment (human run "
            f"{earlier.run_id[:8]}); recorded in experiment {experiment!r} too, for its reports"
        )
    notes += differing_lines(tracking_uri, experiment, claims, claim_runs)
    scores = per_summary([j for j in judgments if isinstance(j, CoherenceAnnotation)])
    for doc, values in claim_values(claims).items():
        scores.setdefault(doc, {}).update(values)
    tracker = Tracker(tracking_uri, experiment, artifact_root)
    annotators = sorted({j.annotator for j in judgments if j.annotator})
    tags = {
        "runner.kind": "human",
        "human.kinds": ",".join(sorted({kind_of(j) for j in judgments})),
        "human.source": str(source_file),
        "human.annotators": ",".join(annotators),
        IDENTITY_TAG: identity,
        "mlflow.note.content": f"People's judgments ({len(judgments)}) read from {source_file}",
    }
    params = {"judge": "human", "judge.model": "human"}
    if len(systems) == 1 and len(runs) == 1:  # every judged summary comes from this run
        (run_id, (record, _)), *_ = runs.items()
        tags["human.judged_run"] = run_id
        params.update({k: v for k, v in record.params.items() if k.split(".")[0] not in NOT_COPIED})
    elif len(claims) == len(judgments) and len(claim_runs) == 1:
        (run_id, (record, judged)), *_ = claim_runs.items()
        if len(judged) == len(claims):  # every judged summary is a document of this run
            tags["human.judged_run"] = run_id
            params.update(
                {k: v for k, v in record.params.items() if k.split(".")[0] not in NOT_COPIED}
            )
    tracker.start(f"human {Path(source_file).stem}"[:250], tags)
    try:
        tracker.log_params(params)
        lines = [json.dumps(to_record(j), ensure_ascii=False) for j in judgments]
        tracker.log_text("\n".join(lines) + "\n", JUDGMENTS_FILE)
        _log_scores(tracker, scores)
        written, untraced = _log_assessments(tracking_uri, tracker.run_id, judgments, runs)
        more, missing = log_claims(tracking_uri, tracker.run_id, claim_runs)
    except BaseException as err:
        tracker.finish("FAILED", f"{type(err).__name__}: {err}")
        raise
    tracker.finish("FINISHED")
    return HumanRun(
        tracker.run_id,
        written + more,
        tuple(untraced + missing),
        None,
        tuple(claim_runs),
        tuple(notes),
    )


def judged_systems(judgments: Sequence[Judgment]) -> set[str]:
    """The systems whose summaries were judged (an Appendix J verdict judges an annotation)."""
    systems: set[str] = set()
    for j in judgments:
        if isinstance(j, (CoherenceAnnotation, Rating, ClaimsJudgment)):
            systems.add(j.system)
        elif isinstance(j, Preference):
            systems.update(j.systems)
    return systems


def _judged_runs(
    uri: str, systems: set[str], source_file: Path | str
) -> dict[str, tuple[RunRecord, str]]:
    """The runs among the judged systems (run id -> run, experiment name); named systems left out.

    Nothing is guessed: a run id this store does not hold is an error.
    """
    runs = {}
    for system in sorted(s for s in systems if _RUN_ID.fullmatch(s)):
        found = judged_run(uri, system)
        if found is None:
            raise HumanDataError(
                f"{source_file}: judged run {system} is not in the store {uri}; "
                "record the judgments in the store of the runs they judge"
            )
        runs[system] = found
    return runs


def per_summary(annotations: Sequence[CoherenceAnnotation]) -> dict[str, dict[str, float]]:
    """``<metric>/*`` values per summary: the owning metric's ``HUMAN.values``, ``annotators``.

    Keyed by doc_id, or ``<system>/<doc_id>`` when several systems are judged (two systems'
    summaries of one document differ).
    """
    by_summary: dict[tuple[str, str, str], list[CoherenceAnnotation]] = {}
    for a in annotations:
        by_summary.setdefault((a.system, a.doc_id, a.metric), []).append(a)
    several = len({system for system, _, _ in by_summary}) > 1
    out: dict[str, dict[str, float]] = {}
    for (system, doc, _), group in by_summary.items():
        name, human = owner_of(group[0])
        values = {**human.values(group), "annotators": float(len(group))}
        key = f"{system}/{doc}" if several else doc
        out.setdefault(key, {}).update({f"{name}/{k}": v for k, v in values.items()})
    return out


def _log_scores(tracker: Tracker, per_doc: dict[str, dict[str, float]]) -> None:
    """The values per summary (``scores.json``, ``scores_table.json``) and their means."""
    if not per_doc:
        return
    keys = sorted({k for values in per_doc.values() for k in values})
    tracker.log_metrics({k: _mean([v[k] for v in per_doc.values() if k in v]) for k in keys})
    tracker.log_json(per_doc, "scores.json")
    table: dict[str, list[object]] = {"doc_id": list(per_doc)}
    table.update({k: [v.get(k) for v in per_doc.values()] for k in keys})
    tracker.log_table(table, "scores_table.json")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _log_assessments(
    uri: str,
    human_run: str,
    judgments: Sequence[Judgment],
    runs: dict[str, tuple[RunRecord, str]],
) -> tuple[int, list[str]]:
    """HUMAN assessments on the traces of the judged runs; (written, untraced documents)."""
    written, untraced = 0, []
    for run_id in runs:
        feedback = [
            f for j in judgments for f in human_feedback(j, human_run) if _system(j) == run_id
        ]
        missing = log_feedback(uri, run_id, feedback)
        written += sum(1 for f in feedback if f.doc_id not in missing)
        untraced += [f"{run_id}/{doc}" for doc in missing]
    return written, untraced


def _system(judgment: Judgment) -> str | None:
    return judgment.system if isinstance(judgment, (CoherenceAnnotation, Rating)) else None


def human_feedback(judgment: Judgment, human_run: str) -> list[Feedback]:
    """A coherence annotation or a rating as HUMAN verdicts on its document's trace.

    One per span or span pair (value its labels, rationale its questions) and one for the
    summary's human score, named by the owning metric (BooookScore: ``coherence_error``,
    ``booookscore``); a rating as its criterion. Pairwise
    preferences and Appendix J verdicts judge two summaries or a judge: they stay in the
    human run only.
    """
    meta = {"human_run": human_run}
    if isinstance(judgment, Rating):
        value = judgment.value
        who = judgment.annotator or "unknown"
        return [Feedback(judgment.doc_id, judgment.criterion, value, HUMAN, who, metadata=meta)]
    if not isinstance(judgment, CoherenceAnnotation):
        return []
    _, owner = owner_of(judgment)
    doc, who, flagged = judgment.doc_id, judgment.annotator, owner.span_assessment
    out = [
        Feedback(doc, flagged, _types(s.labels), HUMAN, who, s.questions, {"span": s.text, **meta})
        for s in judgment.singles
    ]
    out += [
        Feedback(
            doc,
            flagged,
            _types(r.labels),
            HUMAN,
            who,
            r.questions,
            {"span": r.first.text, "second_span": r.second.text, **meta},
        )
        for r in judgment.relations
    ]
    sentences = len(split_sentences(judgment.summary))
    counted = f"{judgment.flagged} of {sentences} sentences flagged by {who}"
    score = owner.score(judgment)
    out.append(Feedback(doc, owner.summary_assessment, score, HUMAN, who, counted, meta))
    return out


def _types(labels: tuple[str, ...]) -> str:
    return ", ".join(labels) or "unlabeled"
