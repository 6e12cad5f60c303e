"""Whether people's labels match the run's documents and summaries, and the lines saying not.

A label is counted only for the summary it judged. A label naming a run judges one of that
run's documents (``unknown_documents``: any other is a misspelt id or another run's, refused
unless the import asks for the matched ones only); a faithfulness label from a release names
no run and is matched to a run's summary by document id and text, runs of whitespace as one
space (``differing_lines`` names those whose document a run holds with another text, at
import; the meta report names them again). An experiment named for the human run must exist
(``check_experiment``): a typo would put the labels where no report looks.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from runner.human.attribute import normalize
from runner.human.judgments import (
    ClaimsJudgment,
    CoherenceAnnotation,
    HumanDataError,
    Judgment,
    Preference,
    Rating,
)
from runner.plugins.errors import nearest
from runner.tracking.reader import RunRecord, client, experiments, find_runs
from runner.tracking.store import quiet_downloads
from runner.tracking.tags import HUMAN_KIND, RUN_KIND_TAG, SWEEP_KIND

LISTED = 5
"""Documents and summaries named in a line; the rest are counted."""
FAITHFUL = "faithful"
"""The ratings criterion whose 0/1 values are summary-level faithfulness labels."""
Summaries = dict[str, dict[str, str]]
"""Run id -> its ``summaries.json`` (doc_id -> summary)."""


def check_experiment(uri: str, experiment: str) -> None:
    """An experiment the store lacks is refused, naming the nearest it has (a typo, mostly)."""
    counts = experiments(uri)
    if experiment in counts:
        return
    names = [name for name, n in counts.items() if not (name == "Default" and n == 0)]
    there = f" (experiments there: {', '.join(names[:LISTED])})" if names else ""
    raise HumanDataError(
        f"experiment '{experiment}' does not exist in {uri}{there}; "
        f"{nearest(experiment, names)}give one it has, or add --create-experiment to record "
        "the human run in a new experiment"
    )


Unknown = list[tuple[Judgment, str]]
"""Judgments naming a document their run does not have, each with the run's id."""


def unknown_documents(judgments: Sequence[Judgment], summaries: Summaries) -> Unknown:
    """The judgments whose judged run (by run id) has no summary of their document.

    ``summaries``: each judged run's summaries (``run_summaries``). Such a label would be
    recorded and counted as a judgment of a summary nobody made (a misspelt id, or another
    run's documents). A run that logged no summaries (not a job's run) cannot tell, and is
    not asked; named systems and release labels, which name no run, are matched later by
    document and text.
    """
    out: Unknown = []
    for judgment in judgments:
        for system in _run_systems(judgment):
            known = summaries.get(system)
            if known and judgment_doc(judgment) not in known:
                out.append((judgment, system))
                break
    return out


def faithful_ratings(
    judgments: Sequence[Judgment], summaries: Summaries
) -> tuple[list[Judgment], list[str]]:
    """Ratings of criterion ``faithful`` (0 or 1) as faithfulness labels of their run's summary.

    A ratings table is the plain way to bring summary-level faithfulness labels
    (``document,system,criterion,value,annotator`` with ``criterion=faithful``): each becomes
    a ``ClaimsJudgment`` with the run's summary text, so the meta report's faithfulness
    tables compare it with every rater of that summary. A faithful rating that cannot
    (a value other than 0 or 1, a system that is no run of this store) stays a rating, and
    a line says why.
    """
    _check_faithful_ratings(judgments)
    out: list[Judgment] = []
    made, no_run = 0, []
    for j in judgments:
        if not (isinstance(j, Rating) and j.criterion == FAITHFUL):
            out.append(j)
            continue
        text = summaries.get(j.system, {}).get(j.doc_id)
        if j.system not in summaries:
            no_run.append(j)
        elif text is not None:
            out.append(ClaimsJudgment(j.doc_id, j.system, j.annotator, text, j.value == 1.0))
            made += 1
            continue
        out.append(j)
    notes = []
    if made:
        notes.append(
            f"{made} ratings of criterion {FAITHFUL} recorded as faithfulness labels of their "
            "run's summaries (1 faithful, 0 not): the meta report's faithfulness tables"
        )
    if no_run:
        systems = ", ".join(sorted({j.system for j in no_run})[:LISTED])
        notes.append(
            f"{len(no_run)} ratings of criterion {FAITHFUL} name systems that are no run of "
            f"this store ({systems}): kept as ratings, not faithfulness labels (a label is "
            "matched by the run's summary text); give the run id as system"
        )
    return out, notes


def _check_faithful_ratings(judgments: Sequence[Judgment]) -> None:
    """``HumanDataError`` (one line, nothing recorded) for faithful ratings that mislead.

    A value other than 0 or 1 (a 0/2 scale once kept its zeros as labels and its twos as
    ratings, and PPI read 0.0), or a criterion one slip away from ``faithful``
    (``faithfulness``: recorded, then no labels in the report).
    """
    ratings = [j for j in judgments if isinstance(j, Rating)]
    bad = [j for j in ratings if j.criterion == FAITHFUL and j.value not in (0.0, 1.0)]
    if bad:
        values = sorted({j.value for j in bad})
        raise HumanDataError(
            f"{len(bad)} of the ratings of criterion {FAITHFUL} are not 0 or 1 (e.g. "
            f"{bad[0].doc_id!r}: {bad[0].value:g}; values {', '.join(f'{v:g}' for v in values)}); "
            "write 1 (faithful) or 0 (not faithful) for every one; nothing recorded"
        )
    near = sorted({j.criterion for j in ratings if j.criterion != FAITHFUL and _near_faithful(j)})
    if near:
        raise HumanDataError(
            f"criterion {near[0]!r} is not {FAITHFUL!r}, the criterion the faithfulness tables "
            f"read: write criterion {FAITHFUL} (values 1 faithful, 0 not), or name a rating of "
            "your own so that it is not mistaken for one; nothing recorded"
        )


def _near_faithful(rating: Rating) -> bool:
    name = rating.criterion.strip().lower().replace("_", "").replace("-", "").replace(" ", "")
    return name.startswith("faithful") or bool(nearest(name, [FAITHFUL]))


def _run_systems(judgment: Judgment) -> tuple[str, ...]:
    """The systems a judgment judges a document of (none for an Appendix J verdict)."""
    if isinstance(judgment, (CoherenceAnnotation, Rating, ClaimsJudgment)):
        return (judgment.system,)
    if isinstance(judgment, Preference):
        return tuple(judgment.systems)
    return ()


def judgment_doc(judgment: Judgment) -> str:
    """The document a judgment judges."""
    return str(getattr(judgment, "doc_id", ""))


def _doc_list(unknown: Unknown) -> str:
    """'bakeryy', 'lighthouse' of run 3f2a1b0c: the first documents and their runs."""
    docs = list(dict.fromkeys(judgment_doc(j) for j, _ in unknown))
    runs = sorted({run_id[:8] for _, run_id in unknown})
    shown = ", ".join(repr(d) for d in docs[:LISTED])
    more = f" and {len(docs) - LISTED} more" if len(docs) > LISTED else ""
    return f"{len(docs)} document(s) ({shown}{more}) that run {', '.join(runs)} does not have"


def unknown_line(source_file: Path | str, unknown: Unknown, total: int) -> str:
    """The refusal: how many judgments, which documents, and the two ways on."""
    return (
        f"{source_file}: {len(unknown)} of {total} judgments name {_doc_list(unknown)}; nothing "
        "recorded; fix the document ids (the run's doc ids), or add --matched-only to record "
        "only the judgments of documents the run has"
    )


def skipped_line(unknown: Unknown, total: int) -> str:
    """The line saying what ``matched_only`` left out."""
    skipped = f"skipped {len(unknown)} of {total} judgments (--matched-only)"
    return f"{skipped}: they name {_doc_list(unknown)}"


def differing_lines(
    uri: str,
    experiment: str,
    claims: Sequence[ClaimsJudgment],
    claim_runs: dict[str, tuple[RunRecord, list[ClaimsJudgment]]],
) -> list[str]:
    """Faithfulness labels whose document a run of ``experiment`` has with another summary.

    Labels are matched to a run's summary by document id and text (whitespace-normalized);
    one whose text differs judged another summary, so no run's value is compared with it.
    Named here, at import, and again by the meta report; labels of documents no run has
    (a release imported before its runs) are not named.
    """
    matched = {id(j) for _, judged in claim_runs.values() for j in judged}
    rest = [j for j in claims if id(j) not in matched]
    if not rest:
        return []
    texts: dict[str, tuple[str, str]] = {}  # doc_id -> (run id, the run's summary)
    for run in find_runs(uri, experiment, status="FINISHED"):
        if run.tags.get(RUN_KIND_TAG) in (HUMAN_KIND, SWEEP_KIND):
            continue
        for doc, text in run_summaries(uri, run.run_id).items():
            texts.setdefault(doc, (run.run_id, text))
    differing = [(j, texts[j.doc_id]) for j in rest if j.doc_id in texts]
    if not differing:
        return []
    lines = [
        f"{len(differing)} of {len(claims)} labelled summaries differ from the run's summary of "
        "their document (compared by text, runs of whitespace as one space): recorded, but "
        "no run's verdict is compared with them"
    ]
    for judgment, (run_id, text) in differing[:LISTED]:
        who = f" by {judgment.annotator}" if judgment.annotator else ""
        lines.append(
            f"  {judgment.doc_id!r}{who}: {first_difference(judgment.summary, text)} "
            f"(run {run_id[:8]})"
        )
    if len(differing) > LISTED:
        lines.append(f"  ... and {len(differing) - LISTED} more")
    return lines


def first_difference(labelled: str, run: str) -> str:
    """Where two summaries part: 'word 12: "boat" here, "ship" in the run'."""
    mine, theirs = normalize(labelled).split(" "), normalize(run).split(" ")
    for i, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            return f"word {i + 1}: {a!r} in the label's summary, {b!r} in the run's"
    shorter = "the label's summary" if len(mine) < len(theirs) else "the run's"
    return f"{shorter} ends at word {min(len(mine), len(theirs))}, the other goes on"


_READ: dict[tuple[str, str], dict[str, str]] = {}
"""Summaries read in this process, by (store, run id): one import matches the same runs for
its unknown documents, its judged runs and its differing labels."""


def run_summaries(uri: str, run_id: str) -> dict[str, str]:
    """The run's ``summaries.json`` ({} when it has none: a run that made no summary).

    Read once per process: a run logs its summaries.json once, at its end, so a copy already
    read is the file. A run without one is asked again (it may still be running).
    """
    if (uri, run_id) not in _READ:
        found = _download_summaries(uri, run_id)
        if not found:
            return found
        _READ[(uri, run_id)] = found
    return dict(_READ[(uri, run_id)])


def _download_summaries(uri: str, run_id: str) -> dict[str, str]:
    store = client(uri)
    if "summaries.json" not in {a.path for a in store.list_artifacts(run_id)}:
        return {}
    with tempfile.TemporaryDirectory(prefix="human-") as tmp, quiet_downloads():
        path = Path(store.download_artifacts(run_id, "summaries.json", tmp))
        data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}
