"""A cell is one experiment: the report averages only the newest version of a cell (issue 31).

An edited loose-module strategy (same params, new code), run by the runner three times, and an
edited prompt file: the cell's numbers are the newest version's alone, computed here from the
summaries the strategy is known to produce (token counts with tiktoken's cl100k_base, the
paper's measure), and the older runs are listed as superseded, naming the plugin file or the
prompt. Repeats (a ``repeat`` param) still pool; a human run that judged an older version is
listed, not dropped, and the meta-evaluation still reads it.
"""

from __future__ import annotations

import json
import statistics
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tiktoken

from runner.human.judgments import Rating
from runner.human.record import record_human_run
from runner.plugins.registry import load
from runner.report.config import ReportConfig
from runner.report.make import Report, make_report
from runner.report.runs import select_runs
from runner.tracking.reader import RunRecord
from tests.helpers.study_folder import DOCS, LOADER
from tests.runner.test_app import run

LENGTH = "stats/length_tokens"
STRATEGY = '''
"""The first WORDS words of the document (no model).{comment}"""
from runner.api import Chunk, StrategyResult

ROLES = ()
IGNORES = {{}}
PROMPT_DIRS = ()
WORDS = {words}


def summarize(chunks: list[Chunk]) -> StrategyResult:
    text = "".join(c.text for c in chunks)
    return StrategyResult(" ".join(text.split()[:WORDS]), [], {{}})
'''
PROMPTED = '''
"""The first k words of the document, k read from its prompt file (no model)."""
from pathlib import Path

from runner.api import Chunk, StrategyResult

ROLES = ()
IGNORES = {}
PROMPT_DIRS = ("lead",)


def summarize(chunks: list[Chunk]) -> StrategyResult:
    k = int((Path(__file__).parent / "prompts" / "lead" / "words.txt").read_text())
    text = "".join(c.text for c in chunks)
    return StrategyResult(" ".join(text.split()[:k]), [], {})
'''
VERSIONS = ((2, ""), (2, " Tidied: same output."), (9, " Longer."))
"""(words, docstring note) of the three versions of first_sent.py: the first edit changes
only its text (new fingerprint, same lengths), the second its output."""


def expected_lengths(words: int) -> list[float]:
    """Per-document token counts of the first ``words`` words, cl100k_base as in the paper."""
    enc = tiktoken.get_encoding("cl100k_base")
    return [float(len(enc.encode(" ".join(t.split()[:words])))) for t in DOCS.values()]


@dataclass(frozen=True)
class Study:
    folder: Path
    uri: str
    ids: list[str]
    """first_sent's three runs, oldest first."""
    prompted: list[str]
    """lead_k's two runs (prompt edited between them), oldest first."""
    human: str
    """The human run that judged first_sent's first version."""
    report: Report


def _fresh(name: str) -> None:
    """Forget a loose module, so the next job loads its file as it is now."""
    load.cache_clear()
    sys.modules.pop(name, None)


def _job(folder: Path, uri: str, strategy: str) -> str:
    return run(
        [
            "strategy=none",
            f"strategy.name={strategy}",
            "data=sample",
            "data.source=three_docs",
            "metrics=stats",
            f"tracking.uri={uri}",
            "tracking.experiment=versions",
            "cache.enabled=false",
            "progress=off",
        ]
    ).run_id


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Study]:
    folder = tmp_path_factory.mktemp("study")
    uri = f"sqlite:///{folder / 'store' / 'mlflow.db'}"
    (folder / "three_docs.py").write_text(textwrap.dedent(LOADER.format(docs=DOCS)).lstrip())
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setattr(sys, "dont_write_bytecode", True)  # each edit is read, not a stale .pyc
        ids = []
        for words, comment in VERSIONS:
            source = STRATEGY.format(words=words, comment=comment)
            (folder / "first_sent.py").write_text(textwrap.dedent(source).lstrip())
            _fresh("first_sent")
            ids.append(_job(folder, uri, "first_sent"))
        (folder / "lead_k.py").write_text(textwrap.dedent(PROMPTED).lstrip())
        (folder / "prompts" / "lead").mkdir(parents=True)
        prompted = []
        for k in ("3", "7"):
            (folder / "prompts" / "lead" / "words.txt").write_text(k)
            _fresh("lead_k")
            prompted.append(_job(folder, uri, "lead_k"))
        _fresh("first_sent")
        _fresh("lead_k")
        rating = Rating("a", ids[0], "overall", 4.0, "ann1")
        human = record_human_run(uri, "versions", [rating], folder / "people.json").run_id
        config = ReportConfig(uri=uri, experiment="versions", out=folder / "out", plots=False)
        yield Study(folder, uri, ids, prompted, human, make_report(config))


def test_the_cell_of_an_edited_plugin_is_its_newest_version_alone(study: Study) -> None:
    table = study.report.table
    assert table is not None and table.layout.columns == ("strategy",)
    (cell,) = [e for (_, c, m), e in table.cells.items() if c == ("first_sent",) and m == LENGTH]
    newest = expected_lengths(VERSIONS[-1][0])
    assert cell.runs == 1 and cell.n == len(DOCS)  # was runs=3, n=9: the three versions pooled
    assert cell.mean == pytest.approx(statistics.mean(newest))
    pooled = newest + 2 * expected_lengths(VERSIONS[0][0])
    assert cell.mean != pytest.approx(statistics.mean(pooled))  # what the old report showed
    averaged = {r.run_id for r in study.report.selection.runs}
    assert study.ids[-1] in averaged and not averaged & set(study.ids[:-1])


def test_older_versions_are_listed_naming_the_plugin_file(study: Study) -> None:
    footnote = study.report.markdown.split("Not averaged (4 runs):")[1]
    newest = study.ids[-1][:8]
    for old in study.ids[:-1]:
        line = next(x for x in footnote.splitlines() if f"({old[:8]}): superseded" in x)
        assert "older version of the cell of the newer" in line and f"({newest})" in line
        assert line.endswith("changed: strategy plugin file first_sent.py"), line
    header = study.report.header
    assert "2 runs averaged, 4 not (4 superseded by a newer version of their cell; " in header
    assert "strategy plugin file first_sent.py" in header
    assert "prompt lead_k/prompts/lead/words.txt" in header


def test_an_edited_prompt_file_is_a_new_version_of_the_cell(study: Study) -> None:
    table = study.report.table
    assert table is not None
    cell = table.cell((), ("lead_k",), LENGTH)
    assert cell is not None and cell.runs == 1
    assert cell.mean == pytest.approx(statistics.mean(expected_lengths(7)))
    old = study.prompted[0][:8]
    line = next(x for x in study.report.markdown.splitlines() if f"({old}): superseded" in x)
    assert line.endswith("changed: prompt lead_k/prompts/lead/words.txt"), line


def test_a_human_run_of_an_older_version_is_listed_and_still_in_the_meta_evaluation(
    study: Study,
) -> None:
    assert study.human not in {r.run_id for r in study.report.selection.runs}
    line = next(x for x in study.report.markdown.splitlines() if study.human[:8] in x)
    assert "superseded: judged " in line and f"({study.ids[0][:8]}), an older version" in line
    assert "judge" not in study.report.table.layout.rows  # no row of its own left empty
    assert f"human judgments: 1 from run(s) {study.human[:8]}" in study.report.meta


def _record(
    name: str, start: int, fingerprint: str, params: dict[str, str], **tags: str
) -> RunRecord:
    return RunRecord(
        run_id=f"{name:0<32}",
        run_name=name,
        experiment_id="1",
        status="FINISHED",
        start_time=start,
        end_time=start + 1,
        params=params,
        metrics={},
        tags={"fingerprint": fingerprint, **tags},
    )


def test_repeats_pool_and_runs_without_recorded_inputs_still_say_why() -> None:
    """Runs made before ``fingerprint.inputs`` existed: plugin tags, else 'fingerprint changed'."""
    cell = {"strategy": "first_sent", "chunk": "2048"}
    plugin = "first_sent (module file /s/first_sent.py), sha256 "
    records = [
        _record("rep1", 9, "r1", {**cell, "repeat": "1"}),
        _record("rep0", 8, "r0", {**cell, "repeat": "0"}),
        _record(
            "new", 7, "n2", {**cell, "model.concurrency": "8"}, **{"plugin.strategy": plugin + "b"}
        ),
        _record(
            "old", 6, "n1", {**cell, "model.concurrency": "2"}, **{"plugin.strategy": plugin + "a"}
        ),
        _record("x-new", 5, "x2", {**cell, "seed": "1"}),
        _record("x-old", 4, "x1", {**cell, "seed": "1"}),
    ]
    chosen = select_runs(records, "versions", None)
    assert [r.run_name for r in chosen.runs] == ["rep1", "rep0", "new", "x-new"]
    reasons = {e.run_name: (e.status, e.reason) for e in chosen.excluded}
    assert reasons["old"] == (
        "superseded",
        "older version of the cell of the newer new (new00000); "
        "changed: strategy plugin file first_sent.py",
    )
    assert reasons["x-old"][1].endswith(
        "changed: fingerprint changed (the runs do not record which input)"
    )


def _inputs(limit: str, version: str, sha: str) -> str:
    """A ``fingerprint.inputs`` tag as ``runner.run.record_setup`` writes it."""
    plugin = {"target": "lab.s", "distribution": "lab", "version": version, "sha256": sha}
    parts = {"config": {"data.limit": limit}, "prompts": {}, "plugins": {"strategy": plugin}}
    return json.dumps(parts)


def test_recorded_inputs_name_a_version_and_a_config_part() -> None:
    cell = {"strategy": "lab"}
    records = [
        _record("new", 2, "b", cell, **{"fingerprint.inputs": _inputs("2", "1.1", "x")}),
        _record("old", 1, "a", cell, **{"fingerprint.inputs": _inputs("1", "1.0", "y")}),
    ]
    (old,) = select_runs(records, "versions", None).excluded
    assert old.changed == ("config data.limit", "strategy plugin version 1.0 -> 1.1")
