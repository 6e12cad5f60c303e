"""Model roles and metric plugins through the real gateway against loopback servers."""

from __future__ import annotations

import statistics
import types
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import ModelUnreachableError
from runner.api.metric import Metric
from runner.api.text import count_tokens
from runner.api.types import LLM, Chunk, Document, MetricResult, StrategyResult, TraceStep
from runner.config.run_config import build_run_config
from runner.run.lifecycle import run_experiment
from runner.tracking.reader import finished_run, scores_frame
from tests.helpers.fake_server import FakeOpenAIServer, echo_responder
from tests.helpers.plugins import register
from tests.runner.config.test_config import composed

RATINGS = ["3", "5", "10"]


def _draft_then_critique(
    chunks: list[Chunk], model: LLM, judge: LLM, *, words: int = 20
) -> StrategyResult:
    """A two-role strategy: the summarizer drafts, the judge critiques the draft."""
    draft = model.complete(f"Summarize in {words} words: {chunks[0].text[:300]}", purpose="draft")
    critique = judge.complete(f"Critique: {draft.text}", purpose="critique")
    steps = (TraceStep("draft", draft.call_id), TraceStep("critique", critique.call_id))
    return StrategyResult(draft.text, steps, {"critique_tokens": float(critique.completion_tokens)})


class _Rating(Metric):
    def __init__(self, judge: LLM, template: str) -> None:
        self.judge, self.template = judge, template

    def score(self, document: Document | None, summary: str) -> MetricResult:
        answer = self.judge.complete(self.template.format(summary), purpose="rating").text
        return MetricResult({"rating": float(answer)})

    def reduce(self, per_document: Any) -> dict[str, float]:
        return {"rating": statistics.median(r.values["rating"] for r in per_document.values())}


SETUPS: list[str] = []


def _rating_setup(judge: LLM, *, prompt_path: str) -> _Rating:
    """Loads its prompt once per job (counted), binds the judge."""
    SETUPS.append(prompt_path)
    return _Rating(judge, Path(prompt_path).read_text(encoding="utf-8"))


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    strategy = types.ModuleType("draft_critique")
    strategy.ROLES = ("model", "judge")  # type: ignore[attr-defined]
    strategy.IGNORES = {}  # type: ignore[attr-defined]
    strategy.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    strategy.summarize = _draft_then_critique  # type: ignore[attr-defined]
    metric = types.ModuleType("rating")
    metric.ROLES = ("judge",)  # type: ignore[attr-defined]
    metric.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    metric.setup = _rating_setup  # type: ignore[attr-defined]
    register(monkeypatch, "strategy", "draft_critique", strategy)
    register(monkeypatch, "metrics", "rating", metric)
    SETUPS.clear()


def _config(model_url: str, judge_url: str, stores: dict[str, str], prompt: Path) -> Any:
    items = [
        "model=openai_compatible",
        f"model.api_base={model_url}",
        "judge=openai_compatible",
        f"judge.api_base={judge_url}",
        "judge.model=openai/judge",
        "metrics=stats",
        *[f"{k}={v}" for k, v in stores.items()],
    ]
    raw = composed(*items)
    raw["strategy"] = {"name": "draft_critique", "words": 25}
    raw["metrics"]["rating"] = {"prompt_path": str(prompt)}
    return build_run_config(raw, tuple(items))


def test_two_roles_and_a_metric_with_setup_through_the_gateway(
    plugins: None, stores: dict[str, str], tmp_path: Path
) -> None:
    asked: list[int] = []

    def judge(request: dict[str, Any]) -> str:
        text = str(request["messages"][-1]["content"])
        if text.startswith("Rate"):
            asked.append(1)
            return RATINGS[len(asked) - 1]
        return "The draft names the keeper but not the storm."

    prompt = tmp_path / "rating.txt"
    prompt.write_text("Rate this summary from 1 to 10: {}", encoding="utf-8")
    with FakeOpenAIServer(echo_responder) as model_server, FakeOpenAIServer(judge) as judge_server:
        config = _config(model_server.url, judge_server.url, stores, prompt)
        result = run_experiment(config)
    assert [str(prompt)] == SETUPS, "the metric was set up once per job, not per document"
    purposes_model = [r["messages"][-1]["content"].split(" ", 1)[0] for r in model_server.requests]
    assert purposes_model == ["Summarize"] * 3
    assert all(r["temperature"] == 0.5 for r in model_server.requests)
    assert len(judge_server.requests) == 6 and all(
        r["temperature"] == 0.0 for r in judge_server.requests
    )
    assert {r["model"] for r in judge_server.requests} == {"judge"}
    client = MlflowClient(stores["tracking.uri"])
    run = client.get_run(result.run_id)
    params = run.data.params
    assert params["roles"] == "model,judge" and params["judge"] == "openai_compatible"
    assert params["judge.model"] == "openai/judge" and params["judge.temperature"] == "0.0"
    assert params["model.model"] == "openai/served-model" and params["model.temperature"] == "0.5"
    # reduce() decides the system value: the median of 3, 5, 10 is 5 (their mean would be 6).
    assert run.data.metrics["rating/rating"] == 5.0
    assert result.totals.calls == 9
    assert any(
        a.path.endswith("rating.txt")
        for a in client.list_artifacts(result.run_id, "prompts/metrics.rating.prompt_path")
    )
    # The read side gives back the same rows.
    rows = scores_frame(stores["tracking.uri"])
    assert sorted(rows["rating/rating"]) == [3.0, 5.0, 10.0]
    assert set(rows["doc_id"]) == set(result.summaries)
    for _, row in rows.iterrows():
        assert row["stats/length_tokens"] == count_tokens(result.summaries[row["doc_id"]])
        assert row["param.judge"] == "openai_compatible"
    fingerprint = run.data.tags["fingerprint"]
    assert finished_run(stores["tracking.uri"], "summarization", fingerprint) == result.run_id


def test_an_unreachable_second_role_fails_before_any_run(
    plugins: None, stores: dict[str, str], tmp_path: Path
) -> None:
    prompt = tmp_path / "rating.txt"
    prompt.write_text("Rate: {}", encoding="utf-8")
    with FakeOpenAIServer(echo_responder) as model_server:
        config = _config(model_server.url, "http://127.0.0.1:9/v1", stores, prompt)
        with pytest.raises(ModelUnreachableError, match="judge=openai_compatible: cannot reach"):
            run_experiment(config)
        assert model_server.requests == []
    client = MlflowClient(stores["tracking.uri"])
    experiment = client.get_experiment_by_name("summarization")
    assert experiment is None or client.search_runs([experiment.experiment_id]) == []


class _Unsafe(Metric):
    """Counts how many documents it is scoring at once."""

    thread_safe = False

    def __init__(self) -> None:
        self.active = 0
        self.most = 0

    def score(self, document: Document | None, summary: str) -> MetricResult:
        import time

        self.active += 1
        self.most = max(self.most, self.active)
        time.sleep(0.05)
        self.active -= 1
        return MetricResult({"n": 1.0})


def test_a_metric_that_is_not_thread_safe_is_serialized(
    monkeypatch: pytest.MonkeyPatch, stores: dict[str, str]
) -> None:
    unsafe = _Unsafe()
    metric = types.ModuleType("unsafe")
    metric.ROLES = ()  # type: ignore[attr-defined]
    metric.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    metric.setup = lambda: unsafe  # type: ignore[attr-defined]
    register(monkeypatch, "metrics", "unsafe", metric)
    with FakeOpenAIServer(echo_responder, latency_s=0.2) as server:
        items = [
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "metrics=stats",
            *[f"{k}={v}" for k, v in stores.items()],
        ]
        raw = composed(*items)
        raw["metrics"]["unsafe"] = {}
        run_experiment(build_run_config(raw, tuple(items)))
        assert server.max_in_flight >= 2  # the documents did run at once (3 on a quiet machine)
    assert unsafe.most == 1
