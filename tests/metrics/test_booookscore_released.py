"""Done-when #1: the authors' released summaries, scored through the real pipeline against a
loopback judge that answers each sentence with the released GPT-4 annotation, give the
scores the data README lists (hier 90.2-90.3, inc 90.9) within 0.3 points.

Skipped on a fresh clone (no ../shared/data).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from metrics.booookscore import score
from runner.call_log import CallLog
from runner.fake_server import FakeOpenAIServer
from runner.llm import Gateway, ModelSpec
from runner.retry import RetryPolicy
from tests.metrics.conftest import REPO, annotation_responder, released

EXPECTED = {"claude-88000-hier": 90.25, "claude-88000-inc": 90.9}


def _gateway(url: str) -> Gateway:
    spec = ModelSpec(
        name="fake", model="openai/fake", api_base=url, context_window=128000, concurrency=16,
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01),
    )
    return Gateway(spec, CallLog(None), cache=None)


def test_direct_calls_reproduce_a_slice_of_hier() -> None:
    """score() per document through the real gateway (a 15-book slice, for speed)."""
    _, summaries, annotations = released("claude-88000-hier")
    books = sorted(summaries)[:15]
    with FakeOpenAIServer(annotation_responder(summaries, annotations)) as server:
        judge = _gateway(server.url)
        results = {b: score(None, summaries[b], judge) for b in books}
    for book, result in results.items():
        listed = annotations.get(book) or {}
        artifact = result.artifacts["annotations.json"]
        confused = {s for s, a in artifact.items() if a["types"]}
        assert confused == set(listed), book
        assert result.values["unparsed_sentences"] == 0
        assert result.values["judged_sentences"] == result.values["sentences"]
        assert not math.isnan(result.values["score"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hydra_app_reproduces_released_scores(name: str, tmp_path: Path) -> None:
    """python -m runner strategy=precomputed ... data=none metrics=booookscore."""
    from mlflow.tracking import MlflowClient

    file, summaries, annotations = released(name)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with FakeOpenAIServer(annotation_responder(summaries, annotations)) as server:
        done = subprocess.run(
            [
                sys.executable, "-m", "runner", "strategy=precomputed", f"strategy.summaries={file}",
                "data=none", "metrics=booookscore", "judge=openai_compatible",
                f"judge.api_base={server.url}", "judge.concurrency=16", "judge.model=openai/fake",
                f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}", "progress=false",
            ],
            cwd=REPO, capture_output=True, text=True, timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("summarization").experiment_id])
    metrics = runs[0].data.metrics
    assert metrics["booookscore/score"] == pytest.approx(EXPECTED[name], abs=0.3)
    assert metrics["booookscore/unparsed_sentences"] == 0
    assert metrics["documents"] == len(summaries)
    assert metrics["booookscore/type/entity_omission"] > metrics["booookscore/type/language"]
