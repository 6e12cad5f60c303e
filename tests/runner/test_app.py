"""The whole app against a loopback OpenAI-compatible server, checked in MLflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import AuthError, ConfigError, DataError, ModelUnreachableError
from runner.api.text import count_tokens
from runner.config.run_config import build_run_config
from runner.data.loaders import load_documents
from runner.run.lifecycle import RunResult, run_experiment
from runner.tracking.usage import read_usage
from tests.helpers.artifacts import artifact as artifact  # re-exported
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.config.test_config import composed

REPO = Path(__file__).resolve().parents[2]


def overrides(server_url: str, stores: dict[str, str], *extra: str) -> list[str]:
    return [
        "model=openai_compatible",
        f"model.api_base={server_url}",
        "model.retry.max_attempts=2",
        "model.retry.base_delay_s=0.01",
        "metrics=stats",
        *[f"{k}={v}" for k, v in stores.items()],
        *extra,
    ]


def run(items: list[str]) -> RunResult:
    return run_experiment(build_run_config(composed(*items), tuple(items)))


def all_runs(uri: str, parents: bool = False) -> list[Any]:
    """Every run of the experiment; a sweep's parent run only when ``parents``."""
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("summarization")
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    return [r for r in runs if parents or r.data.tags.get("runner.kind") != "sweep"]


def test_run_logs_params_metrics_and_artifacts(
    server: FakeOpenAIServer,
    stores: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = run(overrides(server.url, stores, "chunk=1024"))
    client = MlflowClient(stores["tracking.uri"])
    temp = tmp_path / "temp"
    temp.mkdir()
    with monkeypatch.context() as patch:  # reading the usage back leaves no folder in /tmp
        patch.setattr(tempfile, "tempdir", str(temp))
        read_usage(client, result.run_id)
    assert list(temp.iterdir()) == []
    logged = client.get_run(result.run_id)
    assert logged.info.status == "FINISHED"
    assert logged.info.run_name.startswith("model=openai_compatible")
    params = logged.data.params
    assert params["strategy"] == "baseline" and params["chunk"] == "1024"
    assert params["model"] == "openai_compatible" and params["model.temperature"] == "0.5"
    assert params["model.model"] == "openai/served-model" and "judge" not in params  # metrics=stats
    metrics = logged.data.metrics
    usage = read_usage(client, result.run_id)  # the bookkeeping counters: a table, not metrics
    assert metrics["calls"] == 3 and usage["cache_hits"] == 0 and metrics["documents"] == 3
    stories = sum(count_tokens(d.text) for d in load_documents("sample"))
    assert metrics["prompt_tokens"] > stories and "stats/words" in usage  # each story read whole
    assert not [k for k in metrics if k.startswith("doc/")]  # per-document values: the table
    table = json.loads(artifact(client, result.run_id, "scores_table.json"))
    rows = {row[table["columns"].index("doc_id")]: row for row in table["data"]}
    words = table["columns"].index("stats/words")
    scores = json.loads(artifact(client, result.run_id, "scores.json"))
    assert {d: r[words] for d, r in rows.items()} == {
        d: v["stats/words"] for d, v in scores.items()
    }
    (dataset,) = logged.inputs.dataset_inputs
    assert dataset.dataset.name == "sample" and json.loads(dataset.dataset.profile)["num_rows"] == 3
    tags = logged.data.tags
    assert tags["mlflow.source.git.commit"] and len(tags["fingerprint"]) == 16
    summaries = json.loads(artifact(client, result.run_id, "summaries.json"))
    assert set(summaries) == {
        "salt-and-copper",
        "the-lighthouse-keepers-ledger",
        "the-night-train-to-verrin",
    }
    assert summaries == result.summaries
    calls = [
        json.loads(line) for line in artifact(client, result.run_id, "calls.jsonl").splitlines()
    ]
    assert len(calls) == 3 and all(c["purpose"] == "baseline" for c in calls)
    assert "chunk: 1024" in artifact(client, result.run_id, "config.yaml")
    trace = json.loads(artifact(client, result.run_id, "traces/salt-and-copper.json"))
    assert trace[0]["kind"] == "summarize" and trace[0]["truncated_tokens"] == 0
    assert "Below is a part of a story" in artifact(
        client, result.run_id, "strategies/prompts/baseline/summarize.txt"
    )


def test_identical_rerun_makes_zero_model_calls(
    server: FakeOpenAIServer, stores: dict[str, str]
) -> None:
    first = run(overrides(server.url, stores))
    requests = len(server.requests)
    second = run(overrides(server.url, stores))
    assert len(server.requests) == requests == 3
    assert second.totals.calls == 0 and second.totals.cache_hits == 3
    assert second.summaries == first.summaries
    client = MlflowClient(stores["tracking.uri"])
    metrics = client.get_run(second.run_id).data.metrics
    assert metrics["calls"] == 0 and read_usage(client, second.run_id)["cache_hits"] == 3


def test_chunk_larger_than_context_fails_before_any_run(
    server: FakeOpenAIServer, stores: dict[str, str]
) -> None:
    with pytest.raises(
        ConfigError,
        match="chunk=9000 exceeds the 8192-token context of 'openai_compatible'; lower chunk",
    ):
        run(overrides(server.url, stores, "chunk=9000"))
    assert all_runs(stores["tracking.uri"]) == []


def test_missing_api_key_fails_before_any_run(
    stores: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    items = ["model=claude", "metrics=stats", *[f"{k}={v}" for k, v in stores.items()]]
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        run(items)
    assert all_runs(stores["tracking.uri"]) == []


def test_unusable_server_fails_before_any_run(stores: dict[str, str]) -> None:
    items = overrides("http://127.0.0.1:9/v1", stores, "model.timeout_s=2")
    with pytest.raises(
        ModelUnreachableError, match="cannot reach http://127.0.0.1:9/v1 .*fix model.api_base"
    ):
        run(items)
    assert all_runs(stores["tracking.uri"]) == []


def test_server_that_dies_mid_run_marks_the_run_failed(stores: dict[str, str]) -> None:
    with FakeOpenAIServer() as server:
        url = server.url
        items = overrides(url, stores, "model.timeout_s=2", "cache.enabled=false")
        config = build_run_config(composed(*items), tuple(items))
        from runner.run import prepare as job_module

        real_prepare = job_module.prepare

        def prepare_then_stop_server(*args: object, **kwargs: object) -> object:
            prepared = real_prepare(*args, **kwargs)  # type: ignore[arg-type]
            server.__exit__()
            return prepared

        import runner.run.lifecycle as experiment

        original = experiment.prepare
        experiment.prepare = prepare_then_stop_server  # type: ignore[assignment]
        try:
            with pytest.raises(ModelUnreachableError):
                run_experiment(config)
        finally:
            experiment.prepare = original
    (failed,) = all_runs(stores["tracking.uri"])
    assert failed.info.status == "FAILED" and "cannot reach" in failed.data.tags["failure"]


@pytest.mark.parametrize(
    "content,message", [(b"  \n ", "is empty"), ("caf\xe9".encode("latin-1"), "is not UTF-8")]
)
def test_bad_document_fails_before_any_run(
    server: FakeOpenAIServer, stores: dict[str, str], tmp_path: Path, content: bytes, message: str
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bad.txt").write_bytes(content)
    with pytest.raises(DataError, match=message):
        run(overrides(server.url, stores, "data=dir", f"data.path={folder}"))
    assert all_runs(stores["tracking.uri"]) == []
    assert server.requests == []


def test_summaries_made_elsewhere_are_scored_without_sources(
    stores: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "summaries.json"
    path.write_text(
        json.dumps(
            {"book-1": "Anna sails north. She finds the island.", "book-2": "Ben stays home."}
        )
    )
    items = [
        "strategy=none",
        "data=summaries",
        f"data.path={path}",
        "metrics=stats",
        *[f"{k}={v}" for k, v in stores.items()],
    ]
    result = run(items)
    assert result.summaries == {
        "book-1": "Anna sails north. She finds the island.",
        "book-2": "Ben stays home.",
    }
    assert result.totals.calls == 0
    logged = MlflowClient(stores["tracking.uri"]).get_run(result.run_id).data
    client = MlflowClient(stores["tracking.uri"])
    scores = json.loads(artifact(client, result.run_id, "scores.json"))
    assert (
        scores["book-1"]["stats/sentences"] == 2
        and "stats/novel_trigrams_pct" not in logged.metrics
    )
    assert logged.params["roles"] == "none"


def test_summaries_with_their_sources_get_source_metrics(
    stores: dict[str, str], tmp_path: Path
) -> None:
    sources = tmp_path / "books"
    sources.mkdir()
    (sources / "book-1.txt").write_text("Anna sails north in May. She finds the island at last.")
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps({"book-1": "Anna sails north. She finds the island."}))
    items = [
        "strategy=none",
        "data=summaries",
        f"data.path={path}",
        f"data.sources={sources}",
        "metrics=stats",
        *[f"{k}={v}" for k, v in stores.items()],
    ]
    client = MlflowClient(stores["tracking.uri"])
    metrics = json.loads(artifact(client, run(items).run_id, "scores.json"))
    # book-1: trigrams "anna sails north", "sails north she", "north she finds", "she finds the",
    # "finds the island": 2 of 5 ("sails north she", "north she finds") are absent from the source.
    assert metrics["book-1"]["stats/novel_trigrams_pct"] == pytest.approx(40.0)
    # A summary whose id has no source is refused (tests/test_bad_input.py), not scored without one.


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def test_cli_multirun_creates_one_run_per_job(
    server: FakeOpenAIServer, stores: dict[str, str], tmp_path: Path
) -> None:
    done = cli(
        "-m",
        "strategy=baseline",
        "chunk=512,1024",
        "data.limit=1",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        *overrides(server.url, stores),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    runs = all_runs(stores["tracking.uri"])
    assert sorted(r.data.params["chunk"] for r in runs) == ["1024", "512"]
    assert all(r.info.status == "FINISHED" for r in runs)
    assert {r.info.run_name for r in runs} == {
        n for n in (r.info.run_name for r in runs) if "chunk=512" in n or "chunk=1024" in n
    }


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["strategy=nope"],
            "error: strategy=nope is unknown; did you mean none? choose one of: baseline",
        ),
        (["chunk=0"], "error: chunk=0 must be a positive whole number of tokens"),
        (["no_such_key=1"], "error: no_such_key is not a config key"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path
) -> None:
    done = cli(*args, f"hydra.run.dir={tmp_path / 'out'}")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith(message), done.stderr
    assert sum(line.startswith("error:") for line in lines) == 1


def test_a_constant_judge_is_warned_about_in_the_run_and_its_summary(
    stores: dict[str, str],
) -> None:
    from runner.run.console import format_summary

    def answer(request: dict[str, Any]) -> str:
        if "[Your sentence]" in str(request["messages"][-1]["content"]):
            return "Questions: no confusion\nTypes: no confusion"
        return "The keeper lit the lamp. A storm came in the night. The ship was saved at dawn."

    with FakeOpenAIServer(answer) as server:
        items = overrides(
            server.url,
            stores,
            "metrics=paper",
            "judge=openai_compatible",
            f"judge.api_base={server.url}",
        )
        result = run(items)
    printed = format_summary(result)
    assert "warning: judge=openai_compatible flagged no sentence of 9 judged sentences" in printed
    lines = printed.splitlines()
    assert "judge=openai_compatible" in lines[1]  # the description names the judge
    assert lines[2].split()[0] == "BooookScore"  # the headline leads, titled as in the report
    tags = MlflowClient(stores["tracking.uri"]).get_run(result.run_id).data.tags
    assert "flagged no sentence" in tags["runner.warnings"]


def test_a_key_the_strategy_ignores_is_named() -> None:
    from runner.run.lifecycle import ignored_keys

    (line,) = ignored_keys(build_run_config(composed("chunk=512"), ("chunk=512",)))
    assert line.startswith("chunk= has no effect with strategy=baseline")
    assert (
        ignored_keys(
            build_run_config(composed("strategy=hier", "chunk=512"), ("strategy=hier", "chunk=512"))
        )
        == []
    )
