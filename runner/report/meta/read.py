"""What the meta-evaluation reads: human runs and the runs they judged.

A human run is a FINISHED run of the experiment tagged ``runner.kind=human``; its judgments
are the ``to_record`` lines of its artifact ``human/judgments.jsonl`` (issue 23, contract 2).
A judgment names its system by MLflow run id or by a named system (``hier``...); the runs
named by id are the judged runs, whose per-document values (``scores.json``) are read
through ``runner.tracking.reader``'s client (a metric's own artifacts, such as BooookScore's
judge answers, are read by its ``meta_tables`` hook: ``runner.report.meta.hooks``). An
annotator's judgment of one item held by several human runs (the same export recorded
twice) is counted once, with a note (``counted_once``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from runner.api.value import Value
from runner.human.identity import judgment_key
from runner.human.judgments import (
    CoherenceAnnotation,
    Judgment,
    Preference,
    Rating,
    from_record,
)
from runner.plugins import values as value_facts
from runner.reliability.panel import panel_member
from runner.report.read import read_scores
from runner.report.table import Scores
from runner.tracking.reader import RunRecord, client
from runner.tracking.tags import HUMAN_KIND, RUN_KIND_TAG

JUDGMENTS_FILE = "human/judgments.jsonl"


@dataclass(frozen=True)
class MetaInputs:
    """Everything the meta-evaluation tables are computed from."""

    human_runs: tuple[RunRecord, ...]
    judgments: tuple[Judgment, ...]
    judged: dict[str, RunRecord]
    """Run id -> the run, for each system named by a run id of the experiment."""
    scores: Scores
    """The judged runs' per-document values."""
    notes: tuple[str, ...]

    @cached_property
    def values(self) -> dict[str, Value]:
        """The facts the judged runs' plugins recorded about their values (``Value``).

        Merged once for every table and figure that reads a direction or a range.
        """
        return value_facts.merged((r.tags, r.params, r.metrics) for r in self.judged.values())

    def with_members(self, metrics: Sequence[str]) -> list[str]:
        """``metrics``, each followed by its panel members' values the judged runs hold.

        A panel run (``judges=``) keeps each member's ``<metric>:<judge>/<value>`` per
        document beside the pooled ``<metric>/<value>``: a table that compares a metric with
        people gives each member a row after the panel's, to show whether the panel beats its
        best member.
        """
        held = {k for docs in self.scores.values() for values in docs.values() for k in values}
        members: dict[str, list[str]] = {}
        for key in sorted(held):
            found = panel_member(key)
            if found is not None:
                members.setdefault(found[0], []).append(key)
        return [key for metric in metrics for key in (metric, *members.get(metric, ()))]


def human_runs(records: Iterable[RunRecord]) -> list[RunRecord]:
    """FINISHED runs tagged ``runner.kind=human``, in the order given (newest first)."""
    return [r for r in records if r.tags.get(RUN_KIND_TAG) == HUMAN_KIND and r.status == "FINISHED"]


def read_meta(uri: str, records: Sequence[RunRecord]) -> MetaInputs:
    """The human runs among ``records`` (one experiment's runs) and what they judged."""
    humans = human_runs(records)
    per_run: list[list[Judgment]] = []
    notes: list[str] = []
    for run in humans:
        found = read_judgments(uri, run.run_id)
        if found is None:
            notes.append(f"human run {run.run_id[:8]} has no {JUDGMENTS_FILE}: left out")
        per_run.append(found or [])
    judgments, dropped = counted_once(per_run)
    if dropped:
        notes.append(
            f"{dropped} duplicate human judgments dropped: an annotator's judgment of one item "
            "held by several human runs is counted once (the newest run's)"
        )
    by_id = {r.run_id: r for r in records}
    named = {s for j in judgments for s in systems_of(j)}
    judged = {s: by_id[s] for s in sorted(named) if s in by_id}
    scores = read_scores(uri, list(judged.values())) if judged else {}
    return MetaInputs(tuple(humans), tuple(judgments), judged, scores, tuple(notes))


def counted_once(per_run: Sequence[Sequence[Judgment]]) -> tuple[list[Judgment], int]:
    """The judgments of the human runs (newest first), each ``judgment_key`` from one run only.

    A key held by a newer run drops the older runs' judgments of it (an import repeated with
    ``--force``, or a larger export over a smaller one); one run's own judgments are never
    dropped. Returns the judgments kept and how many were dropped.
    """
    owner: dict[str, int] = {}
    kept: list[Judgment] = []
    for index, found in enumerate(per_run):
        for judgment in found:
            if owner.setdefault(judgment_key(judgment), index) == index:
                kept.append(judgment)
    return kept, sum(map(len, per_run)) - len(kept)


def systems_of(judgment: Judgment) -> tuple[str, ...]:
    """The system(s) a judgment is about."""
    if isinstance(judgment, CoherenceAnnotation | Rating):
        return (judgment.system,)
    if isinstance(judgment, Preference):
        return judgment.systems
    return ()  # a Verdict names the source of the annotation judged, not a summary's system


def read_judgments(uri: str, run_id: str) -> list[Judgment] | None:
    """The run's ``human/judgments.jsonl`` as judgments; None when it has none."""
    with tempfile.TemporaryDirectory(prefix="human-") as tmp:
        try:
            path = client(uri).download_artifacts(run_id, JUDGMENTS_FILE, dst_path=tmp)
        except Exception:  # noqa: BLE001 - MLflow raises several kinds for a missing file
            return None
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [from_record(json.loads(line)) for line in lines if line.strip()]


def artifact_text(uri: str, run_id: str, name: str) -> str | None:
    """A run's text artifact ``name``; None when it has none."""
    with tempfile.TemporaryDirectory(prefix="meta-") as tmp:
        try:
            path = client(uri).download_artifacts(run_id, name, dst_path=tmp)
        except Exception:  # noqa: BLE001 - MLflow raises several kinds for a missing file
            return None
        return Path(path).read_text(encoding="utf-8")


def artifact_json(uri: str, run_id: str, name: str) -> Any:
    """A run's JSON artifact ``name``; None when it has none."""
    text = artifact_text(uri, run_id, name)
    return None if text is None else json.loads(text)
