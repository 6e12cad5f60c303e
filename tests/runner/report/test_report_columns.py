"""The report's main table shows the headline metrics the runs recorded (tag runner.headline).

Runs made by the runner with a researcher's own metric (a loose module ``len_ratio.py`` in the
study folder, headline ``ratio``): left at its default, the report adds its column after the
paper's, with each cell's mean computed here from the documents (summary words / document
words), not with the report's code. A run of only that metric gets a main table (it used to
get "no main table"); a run without the metric shows "—" in its column; an explicit
``metric_keys`` is the whole list, and the headline metric it leaves out is named in a note.
"""

from __future__ import annotations

import statistics
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runner.config.run_config import build_run_config
from runner.plugins.registry import load
from runner.report.config import DEFAULT_METRICS, ReportConfig, build_report_config
from runner.report.make import Report, make_report
from runner.run.console import format_summary
from runner.run.lifecycle import RunResult, run_experiment
from tests.helpers.study_folder import DOCS, LOADER
from tests.runner.config.test_config import composed

RATIO = "len_ratio/ratio"
LENGTH = "stats/length_tokens"
STRATEGY = '''
"""The first {words} words of the document (no model)."""
from runner.api import Chunk, StrategyResult

ROLES = ()
IGNORES = {{}}
PROMPT_DIRS = ()


def summarize(chunks: list[Chunk]) -> StrategyResult:
    text = "".join(c.text for c in chunks)
    return StrategyResult(" ".join(text.split()[:{words}]), [], {{}})
'''
METRIC = '''
"""Summary words per document word: a researcher's own metric, in the study folder."""
from runner.api import Metric, MetricResult, Value

ROLES = ()
PROMPT_DIRS = ()
VALUES = {"ratio": Value(title="Compression", better="lower")}


class LenRatio(Metric):
    headline = ("ratio",)

    def score(self, document, summary):
        return MetricResult({"ratio": len(summary.split()) / len(document.text.split())})


def setup():
    return LenRatio()
'''


def ratios(words: int) -> list[float]:
    """The metric's per-document values, computed here from the documents."""
    return [min(words, len(t.split())) / len(t.split()) for t in DOCS.values()]


@dataclass(frozen=True)
class Study:
    folder: Path
    uri: str
    console: str
    """The end-of-run screen of the first job (stats and len_ratio)."""


def _job(folder: Path, uri: str, experiment: str, strategy: str, metrics: list[str]) -> RunResult:
    items = [
        "strategy=none",
        f"strategy.name={strategy}",
        "data=sample",
        "data.source=three_docs",
        "metrics=none",
        f"tracking.uri={uri}",
        f"tracking.experiment={experiment}",
        "cache.enabled=false",
        "progress=off",
    ]
    raw = composed(*items)
    raw["metrics"] = {name: {} for name in metrics}
    return run_experiment(build_run_config(raw, tuple(items)))


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Study]:
    folder = tmp_path_factory.mktemp("own-metric")
    uri = f"sqlite:///{folder / 'store' / 'mlflow.db'}"
    (folder / "three_docs.py").write_text(textwrap.dedent(LOADER.format(docs=DOCS)).lstrip())
    (folder / "len_ratio.py").write_text(textwrap.dedent(METRIC).lstrip())
    for words in (2, 5):
        source = textwrap.dedent(STRATEGY.format(words=words)).lstrip()
        (folder / f"first{words}.py").write_text(source)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setattr(sys, "dont_write_bytecode", True)
        load.cache_clear()
        first = _job(folder, uri, "mixed", "first2", ["stats", "len_ratio"])
        _job(folder, uri, "mixed", "first5", ["stats"])
        _job(folder, uri, "own_only", "first2", ["len_ratio"])
        yield Study(folder, uri, format_summary(first))
    load.cache_clear()
    for name in ("three_docs", "len_ratio", "first2", "first5"):
        sys.modules.pop(name, None)


def _report(study: Study, experiment: str, metrics: tuple[str, ...] = DEFAULT_METRICS) -> Report:
    out = study.folder / "out" / f"{experiment}-{len(metrics)}"
    return make_report(
        ReportConfig(uri=study.uri, experiment=experiment, out=out, metrics=metrics, plots=False)
    )


def test_a_loose_module_metric_gets_its_column_after_the_papers(study: Study) -> None:
    report = _report(study, "mixed")
    table = report.table
    assert table is not None and table.layout.columns == ("strategy",)
    paper = [m for m in DEFAULT_METRICS if m != "booookscore/score"]  # no run has BooookScore
    assert table.metrics == (*paper, RATIO)
    cell = table.cell((), ("first2",), RATIO)
    assert cell is not None and cell.n == len(DOCS)
    assert cell.mean == pytest.approx(statistics.mean(ratios(2)))
    assert table.cell((), ("first5",), RATIO) is None  # that run had no len_ratio
    header, _, first = report.markdown.splitlines()[:3]
    assert header.endswith("| first5: Compression |")  # the title its VALUES declares
    assert first.endswith(" | — |"), first
    assert f"{statistics.mean(ratios(2)):.3f} [" in first
    assert any("added the runs' headline metrics: len_ratio/ratio" in n for n in report.notes)


def test_a_run_of_only_its_own_metric_has_a_main_table(study: Study) -> None:
    report = _report(study, "own_only")
    assert report.table is not None and report.table.metrics == (RATIO,)
    cell = report.table.cell((), (), RATIO)
    assert cell is not None and cell.mean == pytest.approx(statistics.mean(ratios(2)))
    assert "no main table" not in report.text()
    assert "| configuration | Compression |" in report.markdown


def test_its_declared_values_title_the_console_as_a_built_ins_do(study: Study) -> None:
    """The researcher's ``VALUES`` and stats' own, recorded on the run, read back alike."""
    lines = study.console.splitlines()
    assert any(line.strip().startswith("Compression (len_ratio/ratio)") for line in lines)
    assert any(line.strip().startswith("% repeated trigrams (stats/") for line in lines)
    table = _report(study, "mixed").table
    assert table is not None
    assert (table.facts[RATIO].title, table.facts[RATIO].better) == ("Compression", "lower")
    assert table.facts[LENGTH].kind == "count" and table.facts[LENGTH].better is None


def test_metric_keys_is_the_whole_list_and_a_left_out_headline_is_named(study: Study) -> None:
    report = _report(study, "mixed", metrics=(LENGTH,))
    assert report.table is not None and report.table.metrics == (LENGTH,)
    assert RATIO not in report.markdown
    (note,) = [n for n in report.notes if n.startswith("not shown, though the runs recorded")]
    named = note.split(": ", 1)[1].split(" (")[0].split(", ")
    assert named == ["stats/novel_trigrams_pct", "stats/repeated_trigrams_pct", RATIO]


def test_the_config_adds_headline_metrics_only_when_metric_keys_is_left_alone() -> None:
    base = {
        "tracking": {"uri": "sqlite:///x.db", "experiment": "x"},
        "resamples": 1000,
        "confidence": 0.95,
        "seed": 0,
        "plots": True,
    }
    unset = build_report_config({**base, "metric_keys": None})
    default = build_report_config({**base, "metric_keys": list(DEFAULT_METRICS)})
    given = build_report_config({**base, "metric_keys": [LENGTH]})
    assert unset.metrics == default.metrics == DEFAULT_METRICS
    assert unset.adds_headline and default.adds_headline and not given.adds_headline
    assert ReportConfig(uri="u", experiment="x", metrics=(LENGTH,), headline=True).adds_headline
