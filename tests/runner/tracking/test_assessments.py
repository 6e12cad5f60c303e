"""The judge's and the people's verdicts on a document's trace, as the MLflow UI shows them.

A real job (baseline + BooookScore, the judge a loopback server that flags two sentences of
each summary) logs the judge's verdicts as LLM_JUDGE assessments on each document's trace;
then ``record_human_run`` writes the people's annotations of the same summaries as a human
run and as HUMAN assessments on the same traces. A real ``mlflow server`` serves the store and
everything is read back through the REST endpoints the UI uses. The expected values are
computed here from the summaries' text, not with the code under test.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.human.judgments import CoherenceAnnotation, Rating, Relation, Span, from_record
from runner.human.record import HumanRun, record_human_run
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.test_app import overrides, run
from tests.runner.tracking.test_mlflow_traces import _mlflow_server
from tests.test_faults import responder as summarizer

JUDGE_MODEL = "openai/judge-model"
FLAGS = {  # a word of the sentence -> the judge's answer
    "Gulls": ("Why do the gulls matter here?", ["salience"]),
    "letter": ("Who sent the letter?", ["entity omission", "causal omission"]),
}


def responder(request: dict[str, Any]) -> str:
    """The summarizer of tests/test_faults.py; as BooookScore's judge, flags FLAGS' sentences."""
    last = str(request["messages"][-1]["content"])
    if "[Your sentence]" not in last:
        answer = summarizer(request)
        assert isinstance(answer, str)
        return answer
    sentence = last.rsplit("[Your sentence]", 1)[1].split("[Your response]", 1)[0]
    for word, (questions, types) in FLAGS.items():
        if word in sentence:
            return f"Questions: {questions}\nTypes: {', '.join(types)}"
    return "Questions: no confusion\nTypes: no confusion"


@dataclass
class Served:
    run_id: str
    summaries: dict[str, str]
    human: HumanRun
    annotations: list[CoherenceAnnotation]
    traces: dict[str, dict[str, Any]]
    """doc_id -> trace info (with its assessments) from the served store."""
    human_run: dict[str, Any]
    """The human run as the server returns it."""
    judged_run: dict[str, Any]
    judgments_file: str


def _sentence(summary: str, word: str) -> str:
    return next(s for s in re.split(r"(?<=[.!?])\s+", summary.strip()) if word in s)


def _annotations(run_id: str, summaries: dict[str, str]) -> list[CoherenceAnnotation]:
    """ann-1 flags one sentence of the first summary, a sentence and a pair in the second;
    ann-2 flags nothing in the first."""
    first, second = summaries
    s1, s2 = summaries[first], summaries[second]
    gulls = Span(_sentence(s1, "Gulls"), "Why gulls, and why now?", ("salience",))
    lamp = Span(_sentence(s2, "lamp"), "Which lamp?", ("entity omission",))
    pair = Relation(
        Span(_sentence(s2, "night")),
        Span(_sentence(s2, "letter")),
        "How do these connect?",
        ("discontinuity",),
    )
    return [
        CoherenceAnnotation(first, run_id, "ann-1", s1, singles=(gulls,)),
        CoherenceAnnotation(first, run_id, "ann-2", s1),
        CoherenceAnnotation(second, run_id, "ann-1", s2, singles=(lamp,), relations=(pair,)),
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("assessments")
    uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
    stores = {"tracking.uri": uri, "cache.dir": str(root / "cache")}
    with FakeOpenAIServer(responder) as server:
        items = [i for i in overrides(server.url, stores) if not i.startswith("metrics=")]
        result = run(
            [
                *items,
                "data.limit=2",
                "metrics=booookscore",
                "judge=openai_compatible",
                f"judge.api_base={server.url}",
                f"judge.model={JUDGE_MODEL}",
            ]
        )
    client = MlflowClient(uri)
    path = client.download_artifacts(result.run_id, "summaries.json", str(root))
    summaries = json.loads(Path(path).read_text(encoding="utf-8"))
    annotations = _annotations(result.run_id, summaries)
    rating = Rating(next(iter(summaries)), result.run_id, "fluency", 4.0, "ann-2")
    human = record_human_run(uri, None, [*annotations, rating], root / "people.json")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with _mlflow_server(uri, root, env) as api:
        experiment = api(
            "GET", "/ajax-api/2.0/mlflow/experiments/get-by-name?experiment_name=summarization"
        )["experiment"]["experiment_id"]
        location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment}}
        found = api(
            "POST",
            "/ajax-api/3.0/mlflow/traces/search",
            {"locations": [location], "filter": f"attributes.run_id = '{result.run_id}'"},
        )
        traces = {}
        for info in found["traces"]:
            trace_id = urllib.parse.quote(info["trace_id"])
            full = api("GET", f"/ajax-api/3.0/mlflow/traces/{trace_id}")["trace"]["trace_info"]
            traces[info["tags"]["runner.document"]] = full
        human_run = api("GET", f"/ajax-api/2.0/mlflow/runs/get?run_id={human.run_id}")["run"]
        judged = api("GET", f"/ajax-api/2.0/mlflow/runs/get?run_id={result.run_id}")["run"]
        query = urllib.parse.urlencode({"run_id": human.run_id, "path": "human/judgments.jsonl"})
        with urllib.request.urlopen(f"{api.base}/get-artifact?{query}", timeout=60) as answer:
            judgments_file = answer.read().decode("utf-8")
    yield Served(
        result.run_id, summaries, human, annotations, traces, human_run, judged, judgments_file
    )


def _by_source(info: dict[str, Any], source_type: str) -> list[dict[str, Any]]:
    return [a for a in info.get("assessments", []) if a["source"]["source_type"] == source_type]


def _sentences(text: str) -> int:
    """Sentences counted by their end marks (the summaries are plain short sentences)."""
    return len(re.findall(r"[.!?](?:\s|$)", text.strip()))


def test_each_document_trace_has_the_judges_verdicts(served: Served) -> None:
    assert set(served.traces) == set(served.summaries)
    for doc_id, info in served.traces.items():
        judge = _by_source(info, "LLM_JUDGE")
        assert {a["source"]["source_id"] for a in judge} == {JUDGE_MODEL}
        flagged = [a for a in judge if a["assessment_name"] == "coherence_error"]
        expected = {
            _sentence(served.summaries[doc_id], word): (questions, ", ".join(types))
            for word, (questions, types) in FLAGS.items()
        }
        got = {a["metadata"]["sentence"]: (a["rationale"], a["feedback"]["value"]) for a in flagged}
        assert got == expected
        (score,) = [a for a in judge if a["assessment_name"] == "booookscore"]
        sentences = _sentences(served.summaries[doc_id])
        assert score["feedback"]["value"] == pytest.approx(
            100 * (sentences - len(FLAGS)) / sentences
        )


def test_each_document_trace_has_the_peoples_verdicts_beside_them(served: Served) -> None:
    first, second = served.summaries
    people = {doc: _by_source(info, "HUMAN") for doc, info in served.traces.items()}
    errors = {
        doc: sorted(
            (a["source"]["source_id"], a["feedback"]["value"], a["rationale"])
            for a in found
            if a["assessment_name"] == "coherence_error"
        )
        for doc, found in people.items()
    }
    assert errors[first] == [("ann-1", "salience", "Why gulls, and why now?")]
    assert errors[second] == [
        ("ann-1", "discontinuity", "How do these connect?"),
        ("ann-1", "entity omission", "Which lamp?"),
    ]
    pair = next(a for a in people[second] if a["rationale"] == "How do these connect?")
    assert pair["metadata"]["span"] == _sentence(served.summaries[second], "night")
    assert pair["metadata"]["second_span"] == _sentence(served.summaries[second], "letter")
    assert all(a["metadata"]["human_run"] == served.human.run_id for a in people[first])
    scores = {
        (doc, a["source"]["source_id"]): a["feedback"]["value"]
        for doc, found in people.items()
        for a in found
        if a["assessment_name"] == "booookscore"
    }
    n1, n2 = _sentences(served.summaries[first]), _sentences(served.summaries[second])
    assert scores == pytest.approx(
        {
            (first, "ann-1"): 100 * (n1 - 1) / n1,
            (first, "ann-2"): 100.0,
            (second, "ann-1"): 100 * (n2 - 2) / n2,
        }
    )
    (rating,) = [a for a in people[first] if a["assessment_name"] == "fluency"]
    assert rating["source"]["source_id"] == "ann-2" and rating["feedback"]["value"] == 4
    assert served.human.assessments == sum(len(found) for found in people.values())
    assert served.human.untraced == ()


def test_the_human_run_scores_the_summaries_as_the_paper_counts(served: Served) -> None:
    first, second = served.summaries
    n1, n2 = _sentences(served.summaries[first]), _sentences(served.summaries[second])
    by_summary = [100 * (1 - 0.5 / n1), 100 * (1 - 2 / n2)]  # ann-1 and ann-2 averaged on first
    metrics = {m["key"]: m["value"] for m in served.human_run["data"]["metrics"]}
    assert metrics["booookscore/score"] == pytest.approx(sum(by_summary) / 2)
    assert metrics["booookscore/sentences"] == pytest.approx((n1 + n2) / 2)
    assert metrics["booookscore/type/salience"] == pytest.approx((100 * 0.5 / n1 + 0) / 2)


def test_the_human_run_is_tagged_and_carries_the_judged_runs_settings(served: Served) -> None:
    info, data = served.human_run["info"], served.human_run["data"]
    judged = served.judged_run
    assert info["status"] == "FINISHED"
    assert info["experiment_id"] == judged["info"]["experiment_id"]
    tags = {t["key"]: t["value"] for t in data["tags"]}
    assert tags["runner.kind"] == "human" and tags["human.kinds"] == "coherence,rating"
    assert tags["human.annotators"] == "ann-1,ann-2" and tags["human.judged_run"] == served.run_id
    assert tags["human.source"].endswith("people.json")
    params = {p["key"]: p["value"] for p in data["params"]}
    judged_params = {p["key"]: p["value"] for p in judged["data"]["params"]}
    assert params["judge"] == "human" and params["judge.model"] == "human"
    for key in ("strategy", "model", "model.model", "chunk", "data"):
        assert params[key] == judged_params[key]
    lines = [from_record(json.loads(line)) for line in served.judgments_file.splitlines()]
    assert lines[:3] == served.annotations and len(lines) == 4
