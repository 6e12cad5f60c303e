"""What the data says about a summary (``WorkItem.extras``) reaches the metrics that ask for it.

A data loader gives two summaries with their claims; a metric that overrides
``score_input`` counts them from its ``ScoreInput``, one with a plain ``score`` is called as
before. A ``score`` of the older form (an ``extras`` keyword) still gets them, and the job
prints one deprecation line naming the new form. The claims are data too: the run's dataset
digest changes with them.
"""

from __future__ import annotations

import json
import types
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api import Document, Metric, MetricResult, ScoreInput
from runner.api.errors import DataError
from runner.api.types import WorkItem
from runner.config.run_config import build_run_config
from runner.data.sources import for_strategy
from runner.run.lifecycle import run_experiment
from tests.helpers.artifacts import artifact
from tests.helpers.plugins import register
from tests.runner.config.test_config import composed

CLAIMS = {"a": ("The cat sat.", "The dog ran.", "It rained."), "b": ("Nobody came.",)}


def _loader(claims: dict[str, tuple[str, ...]]) -> types.ModuleType:
    module = types.ModuleType("claims_loader")
    module.KEYS = ()  # type: ignore[attr-defined]

    def load() -> list[WorkItem]:
        return [
            WorkItem(d, Document(d, f"Source of {d}."), f"Summary of {d}.", {"claims": c})
            for d, c in claims.items()
        ]

    module.load = load  # type: ignore[attr-defined]
    return module


class _Counting(Metric):
    headline = ("claims",)

    def score_input(self, item: ScoreInput) -> MetricResult:
        assert item.doc_id in CLAIMS and item.summary == f"Summary of {item.doc_id}."
        return MetricResult({"claims": float(len(item.extras.get("claims", ())))})


class _Older(Metric):
    """A metric of runner.api 0.1 before ``ScoreInput``: ``extras`` as a keyword."""

    headline = ("claims",)

    def score(
        self, document: Document | None, summary: str, *, extras: dict[str, Any]
    ) -> MetricResult:
        return MetricResult({"claims": float(len(extras.get("claims", ())))})


class _Plain(Metric):
    headline = ("words",)

    def score(self, document: Document | None, summary: str) -> MetricResult:
        return MetricResult({"words": float(len(summary.split()))})


def _metric(name: str, cls: type[Metric]) -> types.ModuleType:
    module = types.ModuleType(name)
    module.ROLES = ()  # type: ignore[attr-defined]
    module.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    module.setup = lambda: cls()  # type: ignore[attr-defined]
    return module


def _job(
    monkeypatch: pytest.MonkeyPatch, stores: dict[str, str], claims: dict[str, tuple[str, ...]]
) -> tuple[dict[str, dict[str, float]], str]:
    register(monkeypatch, "data", "claims_loader", _loader(claims))
    register(monkeypatch, "metrics", "counting", _metric("counting", _Counting))
    register(monkeypatch, "metrics", "plain", _metric("plain", _Plain))
    register(monkeypatch, "metrics", "older", _metric("older", _Older))
    items = ["strategy=none", "metrics=none", *[f"{k}={v}" for k, v in stores.items()]]
    raw = composed(*items)
    raw["data"] = {"source": "claims_loader"}
    raw["metrics"] = {"counting": {}, "plain": {}, "older": {}}
    result = run_experiment(build_run_config(raw, tuple(items)))
    client = MlflowClient(stores["tracking.uri"])
    scores = json.loads(artifact(client, result.run_id, "scores.json"))
    digest = client.get_run(result.run_id).inputs.dataset_inputs[0].dataset.digest
    return scores, digest


def test_a_metric_asking_for_extras_gets_the_claims_and_others_are_called_as_before(
    monkeypatch: pytest.MonkeyPatch, stores: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    scores, _ = _job(monkeypatch, stores, CLAIMS)
    assert {d: scores[d]["counting/claims"] for d in CLAIMS} == {"a": 3.0, "b": 1.0}
    assert {d: scores[d]["plain/words"] for d in CLAIMS} == {"a": 3.0, "b": 3.0}
    assert {d: scores[d]["older/claims"] for d in CLAIMS} == {"a": 3.0, "b": 1.0}
    notes = [line for line in capsys.readouterr().err.splitlines() if "deprecated" in line]
    assert notes == [
        "note: metric older: its score takes extras, the older form deprecated since "
        "runner.api 0.1; override score_input(self, item: runner.api.ScoreInput) instead "
        "(item.extras, item.doc_id)"
    ]


def test_the_claims_are_part_of_the_dataset_digest(
    monkeypatch: pytest.MonkeyPatch, stores: dict[str, str]
) -> None:
    _, first = _job(monkeypatch, stores, CLAIMS)
    _, other = _job(monkeypatch, stores, {**CLAIMS, "b": ("Somebody came.",)})
    assert first != other


def test_a_strategy_summarizes_the_sources_and_leaves_the_given_summaries_and_claims_out() -> None:
    items = _loader(CLAIMS).load()  # type: ignore[attr-defined]
    used = for_strategy(items, "claims_loader", "hier")
    expected = [("a", None, {}), ("b", None, {})]
    assert [(i.doc_id, i.summary, dict(i.extras)) for i in used] == expected
    assert [i.source for i in used] == [i.source for i in items]
    assert for_strategy(items, "claims_loader", "none") == items


def test_strategy_none_over_a_source_without_summaries_is_one_line() -> None:
    items = [WorkItem("a", Document("a", "text"))]
    lacking = "data=mine gives no summary for 1 document.*choose a strategy"
    with pytest.raises(DataError, match=lacking):
        for_strategy(items, "mine", "none")
    with pytest.raises(DataError, match="without their sources .*use strategy=none"):
        for_strategy([WorkItem("a", None, "s")], "mine", "hier")
