"""A strategy from outside ``strategies/`` draws its trace in the viewer with no edit there.

The strategy below is made in this test module: it summarizes each chunk, then joins the
summaries, and its ``trace_view`` describes a tree with ``runner.api.trace_view``'s shapes. The
job records that view with the run and the page the runner logs draws the tree: how a trace
is drawn belongs to the strategy, and ``runner/view`` knows none by name.
"""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.trace_view import Listed, Node, Section, Step
from runner.api.types import LLM, Chunk, StrategyResult, TraceStep
from runner.config.run_config import build_run_config
from runner.run.lifecycle import run_experiment
from runner.view import page as view
from tests.helpers.artifacts import artifact
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.plugins import register
from tests.runner.config.test_config import composed
from tests.runner.view.test_view import Tree, articles


def _summarize(chunks: list[Chunk], model: LLM) -> StrategyResult:
    trace = []
    for i, chunk in enumerate(chunks):
        done = model.complete(f"Sum up part {i + 1}:\n{chunk.text}", purpose="leaf")
        trace.append(TraceStep("leaf", done.call_id, {"part": i, "text": done.text}))
    joined = " ".join(str(s.detail["text"]) for s in trace)
    trace.append(TraceStep("join", "", {"parts": len(chunks), "text": joined}))
    trace.append(TraceStep("tidy", "", {"removed": 0}))  # covered by no section: listed as is
    return StrategyResult(joined, tuple(trace))


def _trace_view(steps: list[Step]) -> list[Section]:
    leaves = [i for i, s in enumerate(steps) if s["kind"] == "leaf"]
    join = next(i for i, s in enumerate(steps) if s["kind"] == "join")
    children = tuple(
        Node(f"part {steps[i]['part'] + 1}", steps[i]["text"], 0, steps=(Listed(i, "the call"),))
        for i in leaves
    )
    root = Node(
        "the joined summary",
        steps[join]["text"],
        level=1,
        subtitle=f"{len(leaves)} parts",
        warnings=("made up",),
        children=children,
    )
    facts = {"parts": len(leaves)}
    return [Section("outline", "Parts, then the join", (*leaves, join), facts, tree=root)]


@pytest.fixture
def outline(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("outline_strategy")
    module.ROLES = ("model",)  # type: ignore[attr-defined]
    module.IGNORES = {}  # type: ignore[attr-defined]
    module.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    module.summarize = _summarize  # type: ignore[attr-defined]
    module.trace_view = _trace_view  # type: ignore[attr-defined]
    register(monkeypatch, "strategy", "outline_strategy", module)
    return module


def answer(request: dict[str, Any]) -> str:
    text = str(request["messages"][-1]["content"])
    part = re.match(r"Sum up part (\d+)", text)
    return f"Part {part.group(1) if part else '?'} tells of the keeper."


def test_a_plugin_strategy_gets_its_tree_drawn(outline: types.ModuleType, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with FakeOpenAIServer(answer) as server:
        items = [
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "metrics=stats",
            "data.limit=1",
            "chunk=300",
            "progress=false",
            f"tracking.uri={uri}",
            f"cache.dir={tmp_path / 'cache'}",
        ]
        raw = composed(*items)
        raw["strategy"] = {"name": "outline_strategy"}
        run_id = run_experiment(build_run_config(raw, tuple(items))).run_id
    client = MlflowClient(tracking_uri=uri)
    html = artifact(client, run_id, view.ARTIFACT)
    (article,) = articles(Tree(html).root).values()
    (section,) = article.all("section", "outline")
    assert "Parts, then the join" in section.text and "parts" in section.text
    nodes = section.all("details", "node")
    assert len(nodes) >= 3, "a root over at least two parts (chunk=300)"
    root, parts = nodes[0], nodes[1:]
    assert "the joined summary" in root.all("summary")[0].text and "open" in root.attrs
    assert root.all("span", "fallback")[0].text == "made up"
    assert [p.all("div", "text")[0].text for p in parts] == [
        f"Part {i} tells of the keeper." for i in range(1, len(parts) + 1)
    ]
    assert root.all("div", "text")[0].text == " ".join(p.all("div", "text")[0].text for p in parts)
    assert all("the call" in p.all("details", "step")[0].text for p in parts)
    listed = [s.all("b")[0].text for s in article.all("section", "steps")[0].all("details", "step")]
    assert listed == ["tidy"], "the step no section covers is listed as it is"
