"""The same judgments imported twice are recorded once (issue 31, case 2).

A repeated ``python -m runner.annotate import`` finds the human run that holds the same
judgments and records nothing (exit 0, one line naming that run); ``--force`` records them
again, and the meta-evaluation still counts each annotator's judgment of an item once, with
a note. Expected counts come from the tasks written here, never from the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from runner.annotate.__main__ import main
from runner.api.meta import Boot
from runner.human.judgments import CoherenceAnnotation
from runner.human.record import record_human_run
from runner.report.meta.pairs import preference_table
from runner.report.meta.read import read_meta
from runner.tracking.reader import RunRecord, find_runs
from tests.runner.annotate.conftest import HIER, INC
from tests.runner.human.lstasks import PAIRWISE, annotation, choices, task

SHARED = sorted(set(HIER) & set(INC))
"""The documents both runs summarized: one comparison each."""


def _humans(uri: str) -> list[RunRecord]:
    return [r for r in find_runs(uri) if r.tags.get("runner.kind") == "human"]


def _export(kind: str, store: dict[str, str], out: Path) -> list[dict[str, Any]]:
    runs = [store["hier"], store["inc"]] if kind == "preference" else [store["hier"]]
    args = ["export", kind, *runs, "--seed", "3", "--out", str(out)]
    assert main([*args, "--tracking-uri", store["uri"]]) == 0
    tasks: list[dict[str, Any]] = json.loads((out / "tasks.json").read_text())
    return tasks


def _answered(tasks: list[dict[str, Any]], who: int, path: Path) -> Path:
    """Label Studio's export of ``tasks``, every comparison answered alike by user ``who``."""
    exported = [
        task(n, t["data"], annotation(who, choices(**PAIRWISE))) for n, t in enumerate(tasks, 1)
    ]
    path.write_text(json.dumps(exported))
    return path


def _import(store: dict[str, str], export: Path, key: Path, *extra: str) -> None:
    args = ["import", str(export), "--key", str(key), "--tracking-uri", store["uri"], *extra]
    assert main(args) == 0


def _comparisons(uri: str) -> tuple[list[int], tuple[str, ...]]:
    """The meta-evaluation's comparison count per row of the preference table, and its notes."""
    inputs = read_meta(uri, find_runs(uri))
    table = preference_table(inputs, Boot(resamples=20))
    assert table is not None
    column = table.header.index("comparisons")
    return [int(row[column]) for row in table.rows], inputs.notes  # type: ignore[arg-type]


def test_importing_twice_records_once_and_says_which_run_holds_it(
    fresh_store: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = fresh_store["uri"]
    tasks = _export("preference", fresh_store, tmp_path / "pairs")
    assert len(tasks) == len(SHARED)
    export = _answered(tasks, 4, tmp_path / "export.json")
    key = tmp_path / "pairs" / "key.json"
    _import(fresh_store, export, key)
    (first,) = _humans(uri)
    assert f"recorded human run {first.run_id}" in capsys.readouterr().out

    _import(fresh_store, export, key)
    shown = capsys.readouterr().out
    assert [r.run_id for r in _humans(uri)] == [first.run_id]
    lines = [line for line in shown.splitlines() if line.startswith("already recorded")]
    assert len(lines) == 1 and "recorded human run" not in shown
    pattern = (
        rf"already recorded: human run {first.run_id} \(started \d{{4}}-\d\d-\d\d \d\d:\d\d UTC, "
        rf"from {re.escape(str(export))}\) holds these {len(SHARED)} judgments; nothing recorded "
        r"\(--force records them again\)"
    )
    assert re.fullmatch(pattern, lines[0]), lines[0]
    counts, notes = _comparisons(uri)
    assert set(counts) == {len(SHARED)}  # as one import: each task compared once
    assert not any("duplicate" in note for note in notes)


def test_force_records_again_and_the_meta_evaluation_counts_each_judgment_once(
    fresh_store: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = fresh_store["uri"]
    tasks = _export("preference", fresh_store, tmp_path / "pairs")
    export = _answered(tasks, 4, tmp_path / "export.json")
    key = tmp_path / "pairs" / "key.json"
    _import(fresh_store, export, key)
    _import(fresh_store, export, key, "--force")
    assert "already recorded" not in capsys.readouterr().out
    assert len(_humans(uri)) == 2
    counts, notes = _comparisons(uri)
    assert set(counts) == {len(SHARED)}
    assert f"{len(SHARED)} duplicate human judgments dropped" in " ".join(notes)


def test_partial_overlaps_count_each_annotators_judgment_of_an_item_once(
    fresh_store: dict[str, str], tmp_path: Path
) -> None:
    """Export A (tasks 0-2) then a larger B (tasks 1-4), same answers: 5 comparisons, 2 dropped;
    another annotator's judgment of an item already judged is a judgment of its own."""
    uri = fresh_store["uri"]
    tasks = _export("preference", fresh_store, tmp_path / "pairs")
    key = tmp_path / "pairs" / "key.json"
    _import(fresh_store, _answered(tasks[:3], 4, tmp_path / "a.json"), key)
    _import(fresh_store, _answered(tasks[1:5], 4, tmp_path / "b.json"), key)
    _import(fresh_store, _answered(tasks[:1], 8, tmp_path / "c.json"), key)
    assert len(_humans(uri)) == 3
    counts, notes = _comparisons(uri)
    assert set(counts) == {5 + 1}
    assert "2 duplicate human judgments dropped" in " ".join(notes)


def test_record_human_run_itself_records_the_same_judgments_once(
    fresh_store: dict[str, str],
) -> None:
    """The rule holds for every human run (the authors' files, tables), not only the CLI's."""
    uri, hier = fresh_store["uri"], fresh_store["hier"]
    judgments = [CoherenceAnnotation(doc, hier, "a1", HIER[doc]) for doc in ("doc-0", "doc-1")]
    first = record_human_run(uri, None, judgments, "ratings.csv")
    assert first.already is None
    again = record_human_run(uri, None, list(reversed(judgments)), "copy-of-ratings.csv")
    assert again.already is not None and again.run_id == first.run_id
    assert [r.run_id for r in _humans(uri)] == [first.run_id]
    other = record_human_run(uri, None, judgments[:1], "ratings.csv")  # other content: recorded
    forced = record_human_run(uri, None, judgments, "ratings.csv", force=True)
    assert {r.run_id for r in _humans(uri)} == {first.run_id, other.run_id, forced.run_id}
    inputs = read_meta(uri, find_runs(uri))
    assert sorted(j.doc_id for j in inputs.judgments) == ["doc-0", "doc-1"]
