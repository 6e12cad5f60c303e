"""Done-when #1: the authors' released summaries, scored through the real pipeline against a
loopback judge that answers each sentence with the released GPT-4 annotation, give the
scores the data README lists (hier 90.2-90.3, inc 90.9) within 0.3 points.

Skipped on a fresh clone (no ../shared/data).
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from metrics.booookscore import score
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway, ModelSpec
from runner.llm.retry import RetryPolicy
from runner.tracking.usage import read_usage
from tests.helpers.fake_server import FakeOpenAIServer
from tests.metrics.conftest import REPO, annotation_responder, released

EXPECTED = {"claude-88000-hier": 90.25, "claude-88000-inc": 90.9}


def _gateway(url: str) -> Gateway:
    spec = ModelSpec(
        name="fake",
        model="openai/fake",
        api_base=url,
        context_window=128000,
        concurrency=16,
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01),
    )
    return Gateway(spec, CallLog(None), cache=None)


def test_direct_calls_reproduce_a_slice_of_hier() -> None:
    """score() per document through the real gateway (a 6-book slice, for speed)."""
    _, summaries, annotations = released("claude-88000-hier")
    books = sorted(summaries)[:6]
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


@pytest.fixture(scope="module")
def judge_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One response cache for this module's runs: the app runs fill it, the sweep reads it."""
    return tmp_path_factory.mktemp("released-cache")


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeOpenAIServer]:
    """The loopback judge of this module's runs, answering each sentence with its released
    annotation (one server: its address is part of every cached request)."""
    files = {name: released(name) for name in sorted(EXPECTED)}
    everything = {f"{n}/{b}": s for n, (_, sums, _) in files.items() for b, s in sums.items()}
    labels = {f"{n}/{b}": a for n, (_, _, anns) in files.items() for b, a in anns.items()}
    with FakeOpenAIServer(annotation_responder(everything, labels)) as server:
        yield server


@pytest.fixture(scope="module")
def app_runs(
    tmp_path_factory: pytest.TempPathFactory, judge: FakeOpenAIServer, judge_cache: Path
) -> dict[str, dict[str, float]]:
    """Both released files through ``python -m runner strategy=none data=summaries ...``,
    as two processes at once against one loopback judge (the gateway's per-call CPU is the
    bottleneck, so two processes use both cores). Returns each run's MLflow metrics and the
    counters of its usage.json."""
    from mlflow.tracking import MlflowClient

    files = {name: released(name) for name in sorted(EXPECTED)}
    root = tmp_path_factory.mktemp("released")
    procs = {
        name: _launch(file, judge.url, root / name, judge_cache)
        for name, (file, _, _) in files.items()
    }
    outputs = {name: proc.communicate(timeout=600) for name, proc in procs.items()}
    metrics = {}
    for name, proc in procs.items():
        assert proc.returncode == 0, outputs[name][1][-3000:]
        uri = f"sqlite:///{root / name / 'mlflow.db'}"
        client = MlflowClient(tracking_uri=uri)
        runs = client.search_runs([client.get_experiment_by_name("summarization").experiment_id])
        metrics[name] = {
            **read_usage(client, runs[0].info.run_id),
            **runs[0].data.metrics,
        }  # counters too
    return metrics


def _launch(file: Path, url: str, folder: Path, cache: Path) -> subprocess.Popen[str]:
    folder.mkdir()
    command = [
        sys.executable,
        "-m",
        "runner",
        "strategy=none",
        "data=summaries",
        f"data.path={file}",
        "metrics=booookscore",
        "judge=openai_compatible",
        f"judge.api_base={url}",
        "judge.model=openai/fake",
        "judge.concurrency=16",
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}",
        f"cache.dir={cache}",
        "progress=false",
    ]
    return subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hydra_app_reproduces_released_scores(
    name: str, app_runs: dict[str, dict[str, float]]
) -> None:
    """The system score is the paper's, every sentence parsed, every book scored."""
    metrics = app_runs[name]
    summaries = released(name)[1]
    assert metrics["booookscore/score"] == pytest.approx(EXPECTED[name], abs=0.3)
    assert metrics["booookscore/unparsed_sentences"] == 0
    assert metrics["documents"] == len(summaries)
    assert metrics["booookscore/judge_calls"] == pytest.approx(
        metrics["booookscore/sentences"], abs=0.5
    )
    assert metrics["booookscore/type/entity_omission"] > metrics["booookscore/type/language"]


def test_a_sweep_over_the_released_files_reports_the_papers_table2_cells(
    tmp_path: Path,
    app_runs: dict[str, dict[str, float]],
    judge: FakeOpenAIServer,
    judge_cache: Path,
) -> None:
    """-m over both claude-88000 files (joblib, two processes), then python -m runner.report:
    the BooookScore cells read the paper's Table 2 values (hier 90.3, incremental 90.9).

    The judge's answers come from the cache the app runs above filled (the same judge and
    prompts, so the same answers the server gives): the judge's ~6,000 calls are the app runs'
    check, the sweep, the report and their numbers are this one's."""
    import csv

    files = {name: released(name) for name in sorted(EXPECTED)}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    paths = ",".join(str(file) for file, _, _ in files.values())
    asked = len(judge.requests)
    sweep = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "-m",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "strategy=none",
            "data=summaries",
            f"data.path={paths}",
            "metrics=booookscore",
            "judge=openai_compatible",
            f"judge.api_base={judge.url}",
            "judge.model=openai/fake",
            "judge.concurrency=16",
            f"tracking.uri={uri}",
            f"cache.dir={judge_cache}",
            "progress=false",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    assert len(judge.requests) == asked, "the sweep asked the judge what the app runs cached"
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner.report.make",
            f"tracking.uri={uri}",
            f"out={tmp_path / 'report'}",
            "resamples=200",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    rows = list(csv.DictReader((tmp_path / "report" / "table.csv").read_text().splitlines()))
    cells = {r["data.path"]: float(r["mean"]) for r in rows if r["metric"] == "booookscore/score"}
    assert len(cells) == 2
    for path, mean in cells.items():
        name = next(n for n in EXPECTED if n in path)
        assert mean == pytest.approx(EXPECTED[name], abs=0.3), path
