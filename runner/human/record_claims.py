"""Faithfulness judgments in the store: the runs they judged, their values, their assessments.

Faithfulness judgments (``ClaimsJudgment``: a release's summary and claim labels) name no
run: their summaries were made by the release's summarizers. The judged documents are found
in the store instead: every FINISHED job run of the experiment (the one given, else
``summarization``) with a document of the same doc_id and the same summary text
(whitespace-normalized) gets the judgment on that document's trace, as
``<metric>/faithful`` (the summary's label, its difficulty as rationale) and one
``<metric>/claim`` per claim (the label of ``CLAIM_LABELS``, the reason as rationale, the
claim, its index and evidence as metadata). With no such run the human run is still recorded
(``runner.human.record``): the meta-evaluation matches later runs by doc_id and summary text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from runner.human.attribute import normalize
from runner.human.claim_files import built_in_claims_owner
from runner.human.judgments import CLAIM_LABELS, ClaimsJudgment, HumanDataError
from runner.human.matching import run_summaries
from runner.tracking.assessments import HUMAN, Feedback, log_feedback
from runner.tracking.reader import RunRecord, experiments, find_runs
from runner.tracking.tags import HUMAN_KIND, RUN_KIND_TAG, SWEEP_KIND

DEFAULT_EXPERIMENT = "summarization"
"""Where labels no run judged are recorded."""
SUPPORTED = CLAIM_LABELS[0]
"""The one claim label counted as supported: ``partial`` and ``cannot_tell`` are not, as
FABLES reports the share of claims labelled Yes among all claims."""
ClaimRuns = dict[str, tuple[RunRecord, list[ClaimsJudgment]]]
"""Run id -> (the run, the judgments of its documents)."""


def claims_experiment(
    uri: str, claims: Sequence[ClaimsJudgment], source_file: Path | str
) -> tuple[str, ClaimRuns]:
    """The one experiment whose runs judged these summaries, and those runs (``claims_judged``).

    People's labels from a release file name no run: their judged runs are found by doc_id
    and summary text in every experiment of the store, so ``annotate import storysumm.json``
    after a preset (``tracking.experiment=storysumm_raters``) lands beside its runs. Judged
    runs in several experiments is one line asking for ``--experiment``, never a guess; none
    is ``summarization`` with no judged run.
    """
    if not claims:
        return DEFAULT_EXPERIMENT, {}
    found = {name: claims_judged(uri, name, claims, source_file) for name in experiments(uri)}
    found = {name: runs for name, runs in found.items() if runs}
    if len(found) > 1:
        raise HumanDataError(
            f"{source_file}: runs of several experiments judged these summaries "
            f"({', '.join(found)}); give --experiment NAME to record the labels beside one"
        )
    return next(iter(found.items()), (DEFAULT_EXPERIMENT, {}))


def claims_judged(
    uri: str,
    experiment: str,
    claims: Sequence[ClaimsJudgment],
    source_file: Path | str,
    named: Sequence[RunRecord] = (),
) -> ClaimRuns:
    """The judged runs: run id -> (run, the judgments of its documents).

    A judged run is a FINISHED job run of ``experiment`` (or one of the runs the judgments
    name as their system, ``named``: a Label Studio task key's) holding a document with the
    judgment's doc_id and the same summary text (whitespace-normalized).

    A run holding the judged text under the judgment's doc_id and under another one is an
    error naming both (which document the people judged cannot be told), raised before
    anything is written.
    """
    found: ClaimRuns = {}
    if not claims:
        return found
    candidates = {r.run_id: r for r in find_runs(uri, experiment, status="FINISHED")}
    candidates.update({r.run_id: r for r in named if r.status == "FINISHED"})
    for run in candidates.values():
        if run.tags.get(RUN_KIND_TAG) in (HUMAN_KIND, SWEEP_KIND):
            continue
        docs_of: dict[str, list[str]] = {}
        for doc, text in run_summaries(uri, run.run_id).items():
            docs_of.setdefault(normalize(text), []).append(doc)
        judged = []
        for judgment in claims:
            docs = docs_of.get(normalize(judgment.summary), [])
            if judgment.doc_id not in docs:
                continue
            if len(docs) > 1:
                other = next(d for d in docs if d != judgment.doc_id)
                raise HumanDataError(
                    f"{source_file}: the summary of {judgment.doc_id!r} matches two documents "
                    f"of run {run.run_id}, {judgment.doc_id!r} and {other!r}; give each "
                    "document its own summary in that run (or record into another experiment)"
                )
            judged.append(judgment)
        if judged:
            found[run.run_id] = (run, judged)
    return found


def claim_values(claims: Sequence[ClaimsJudgment]) -> dict[str, dict[str, float]]:
    """Per summary (doc_id): ``<metric>/faithful``, ``<metric>/supported``, ``<metric>/claims``.

    ``faithful`` is 1.0 or 0.0 (the mean over annotators who gave a label; absent when none
    did); ``supported`` the share of claims labelled ``supported`` (``partial`` and
    ``cannot_tell`` count as not supported: FABLES' % of claims labelled Yes among all
    claims) and ``claims`` their count, each the mean over annotators who labelled claims.
    """
    groups: dict[tuple[str, str], list[ClaimsJudgment]] = {}
    for judgment in claims:
        groups.setdefault((judgment.doc_id, _metric(judgment)), []).append(judgment)
    out: dict[str, dict[str, float]] = {}
    for (doc, metric), group in groups.items():
        values: dict[str, float] = {}
        labels = [1.0 if j.faithful else 0.0 for j in group if j.faithful is not None]
        if labels:
            values[f"{metric}/faithful"] = _mean(labels)
        labelled = [j.claims for j in group if j.claims]
        if labelled:
            shares = [sum(c.label == SUPPORTED for c in cs) / len(cs) for cs in labelled]
            values[f"{metric}/supported"] = _mean(shares)
            values[f"{metric}/claims"] = _mean([float(len(cs)) for cs in labelled])
        if values:  # a summary with neither a label nor claims has no value to average
            out.setdefault(doc, {}).update(values)
    return out


def _metric(judgment: ClaimsJudgment) -> str:
    """The metric owning the judgment's format (the built-in one when it names none)."""
    return judgment.metric or built_in_claims_owner()


def log_claims(uri: str, human_run: str, claim_runs: ClaimRuns) -> tuple[int, list[str]]:
    """HUMAN assessments of the faithfulness judgments on the judged runs' traces."""
    written, untraced = 0, []
    for run_id, (_, judged) in claim_runs.items():
        feedback = [f for j in judged for f in claims_feedback(j, human_run)]
        missing = log_feedback(uri, run_id, feedback)
        written += sum(1 for f in feedback if f.doc_id not in missing)
        untraced += [f"{run_id}/{doc}" for doc in missing]
    return written, untraced


def claims_feedback(judgment: ClaimsJudgment, human_run: str) -> list[Feedback]:
    """One faithfulness judgment as HUMAN verdicts, named as the metric's judge names its own.

    ``<metric>/faithful`` (bool; rationale the difficulty) when the summary has a label, and
    one ``<metric>/claim`` per claim or sentence (value its label, rationale the reason;
    metadata the claim, its index, the evidence as a JSON list, the unit).
    """
    metric, who = _metric(judgment), judgment.annotator or "unknown"
    doc, meta = judgment.doc_id, {"human_run": human_run}
    out = []
    if judgment.faithful is not None:
        why = f"difficulty: {judgment.difficulty}" if judgment.difficulty else ""
        out.append(Feedback(doc, f"{metric}/faithful", judgment.faithful, HUMAN, who, why, meta))
    for claim in judgment.claims:
        about = {
            "claim": claim.text,
            "index": str(claim.index),
            "evidence": json.dumps(list(claim.evidence), ensure_ascii=False),
            "unit": judgment.unit,
            **meta,
        }
        out.append(Feedback(doc, f"{metric}/claim", claim.label, HUMAN, who, claim.reason, about))
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")
