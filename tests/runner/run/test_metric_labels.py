"""A metric run under a label of the user's gets all it gets under its own name.

``metrics: {bs: {name: booookscore}}`` (here ``metrics=none +metrics.bs.name=booookscore``,
as the README shows a block with ``name:``) and ``metrics=booookscore`` judge the same
summaries with the same loopback judge (tests/runner/tracking/test_assessments.py's, which flags the
sentences naming gulls or a letter). Both runs must carry the same score, the eight
error-type rates as MLflow metrics (under ``bs/`` for the labelled one), the judge's
assessments on the document traces, the viewer's legend and the report's error-type figure.
Before the metric hooks, the labelled run had the score only: no rates, no assessments, no
legend rates and no figure. Expected values come from the summaries' text and the paper's
eight types written out here, not from the code under test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.report import plots
from runner.report.config import ReportConfig
from runner.report.make import make_report
from runner.tracking.assessments import document_traces
from runner.tracking.reader import RunRecord
from runner.view.artifacts import read_files
from runner.view.contents import build_page
from runner.view.page import render_run
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.test_app import overrides, run
from tests.runner.tracking.test_assessments import FLAGS, JUDGE_MODEL, responder

TYPES = (
    "entity_omission",
    "event_omission",
    "causal_omission",
    "salience",
    "discontinuity",
    "duplication",
    "inconsistency",
    "language",
)
"""The paper's eight error types (Chang et al., Table 3), as the rates' suffixes."""
RUNS = {
    "booookscore": ("metrics=booookscore",),
    "bs": ("metrics=none", "+metrics.bs.name=booookscore"),
}
"""Label -> how the run names the metric; each run in its own experiment (one report each)."""


@dataclass
class Judged:
    uri: str
    root: Path
    run_ids: dict[str, str]
    """label -> run id."""

    def record(self, label: str) -> RunRecord:
        return RunRecord.from_run(MlflowClient(self.uri).get_run(self.run_ids[label]))

    def summaries(self, label: str) -> dict[str, str]:
        client = MlflowClient(self.uri)
        path = client.download_artifacts(self.run_ids[label], "summaries.json", str(self.root))
        return dict(json.loads(Path(path).read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judged]:
    root = tmp_path_factory.mktemp("labels")
    uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
    stores = {"tracking.uri": uri, "cache.dir": str(root / "cache")}
    run_ids = {}
    with FakeOpenAIServer(responder) as server:
        common = [i for i in overrides(server.url, stores) if not i.startswith("metrics=")]
        for label, metric in RUNS.items():
            result = run(
                [
                    *common,
                    *metric,
                    f"tracking.experiment=as_{label}",
                    "data.limit=2",
                    "judge=openai_compatible",
                    f"judge.api_base={server.url}",
                    f"judge.model={JUDGE_MODEL}",
                ]
            )
            run_ids[label] = result.run_id
    yield Judged(uri, root, run_ids)


def _flagged(summary: str) -> int:
    """Sentences the loopback judge flags: those naming one of FLAGS' words."""
    sentences = re.split(r"(?<=[.!?])\s+", summary.strip())
    return sum(1 for s in sentences if any(word in s for word in FLAGS))


def test_the_labelled_run_has_the_same_score_and_rates_as_mlflow_metrics(judged: Judged) -> None:
    plain, labelled = judged.record("booookscore"), judged.record("bs")
    assert labelled.metrics["bs/score"] == pytest.approx(plain.metrics["booookscore/score"])
    assert plain.metrics["booookscore/score"] < 100.0  # the judge flagged something
    for slug in TYPES:
        assert labelled.metrics[f"bs/type/{slug}"] == pytest.approx(
            plain.metrics[f"booookscore/type/{slug}"]
        )
    assert labelled.metrics["bs/type/salience"] > 0.0  # FLAGS' gulls sentence


def _judge_assessments(uri: str, run_id: str) -> list[Any]:
    client = MlflowClient(uri)
    found = []
    for trace_id in document_traces(uri, run_id).values():
        found += [
            a
            for a in client.get_trace(trace_id).info.assessments
            if a.source.source_type == "LLM_JUDGE"
        ]
    return found


def test_the_labelled_run_has_the_judges_assessments(judged: Judged) -> None:
    for label in RUNS:
        summaries = judged.summaries(label)
        expected = sum(_flagged(s) for s in summaries.values()) + len(summaries)  # + one score each
        found = _judge_assessments(judged.uri, judged.run_ids[label])
        assert len(found) == expected and expected > len(summaries), label
        assert {a.source.source_id for a in found} == {JUDGE_MODEL}
        assert {a.name for a in found} == {"coherence_error", "booookscore"}


def test_the_viewer_legend_shows_the_rates_under_either_label(judged: Judged) -> None:
    client = MlflowClient(judged.uri)
    for label in RUNS:
        html = render_run(client, judged.run_ids[label])
        items = dict(re.findall(r'<span class="item" data-type="(\w+)" data-rate="([^"]*)">', html))
        assert list(items) == list(TYPES), label
        metrics = judged.record(label).metrics
        for slug in TYPES:
            assert float(items[slug]) == pytest.approx(metrics[f"{label}/type/{slug}"])


def test_the_report_draws_the_error_types_under_either_label(judged: Judged) -> None:
    for label in RUNS:
        config = ReportConfig(
            uri=judged.uri,
            experiment=f"as_{label}",
            out=judged.root / f"report-{label}",
            metrics=(f"{label}/score",),
            resamples=100,
        )
        report = make_report(config)
        assert judged.root / f"report-{label}" / "error_types.png" in report.files, report.notes


def test_a_run_recorded_before_the_categories_tag_keeps_its_legend_and_figure(
    judged: Judged,
) -> None:
    """An older run has no ``metric.<label>.categories`` tag: the plugin named by the label says."""
    now = judged.record("booookscore")
    older = replace(now, tags={k: v for k, v in now.tags.items() if not k.startswith("metric.")})
    assert older.tags != now.tags  # the tag was there to remove
    client = MlflowClient(judged.uri)
    files = read_files(client, now.run_id)
    legend = [(e.label, e.rate) for e in build_page(older, files).legend]
    assert [label.replace(" ", "_") for label, _ in legend] == list(TYPES)
    assert legend == [(e.label, e.rate) for e in build_page(now, files).legend]
    kinds = plots.error_kinds([older])
    assert [names for _, names in kinds] == [(f"booookscore/type/{slug}",) for slug in TYPES]
