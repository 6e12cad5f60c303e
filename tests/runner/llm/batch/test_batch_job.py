"""``judge.batch=true`` end to end against a loopback Anthropic server (Messages + Message Batches).

The same BooookScore job runs online and in batch mode. Expected scores are counted here from
the summaries and the scripted judge (a sentence with a flagged word is confusing), never read
from the runner; the batch run must match them and the online run, cost half, send one batch,
and never send a request twice: not after a SIGKILL while waiting, and not when part of a
batch fails (only the failed requests travel again).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import BatchError, ConfigError
from runner.config.run_config import build_run_config
from runner.llm.batch.ledger import Ledger
from runner.run.lifecycle import RunResult, run_experiment
from tests.helpers.anthropic_server import FakeAnthropicServer, text_of
from tests.helpers.cli import runner_cli
from tests.runner.config.test_config import composed

REPO = Path(__file__).resolve().parents[4]

SUMMARIES = {
    "book-1": "Anna sails north in May. Gulls circle the mast all day. She finds the island.",
    "book-2": "Ben stays home with his dog. A letter arrives at noon.",
    "book-3": "Cora paints the harbour. The boats leave at dawn. She keeps the last canvas. "
    "Gulls steal her bread.",
}
FLAGGED = ("Gulls", "letter")
"""A sentence holding one of these words confuses the scripted judge."""
KEY = "test-anthropic-key"


def expected_booookscore() -> float:
    """The mean over summaries of the % of sentences without a flagged word."""
    shares = []
    for summary in SUMMARIES.values():
        sentences = re.split(r"(?<=[.!?])\s+", summary.strip())
        clean = [s for s in sentences if not any(w in s for w in FLAGGED)]
        shares.append(len(clean) / len(sentences))
    return 100 * sum(shares) / len(shares)  # the metric reports a percentage


def sentence_count() -> int:
    return sum(len(re.split(r"(?<=[.!?])\s+", s.strip())) for s in SUMMARIES.values())


def judge(params: dict[str, Any]) -> str:
    """BooookScore's judge: questions for a sentence with a flagged word, else none."""
    last = " ".join(text_of(params["messages"][-1].get("content")))
    sentence = last.rsplit("[Your sentence]", 1)[-1].split("[Your response]", 1)[0]
    if any(word in sentence for word in FLAGGED):
        return "Questions: Why does this matter here?\nTypes: salience"
    return "Questions: no confusion\nTypes: no confusion"


def is_sentence(params: dict[str, Any], word: str) -> bool:
    last = " ".join(text_of(params["messages"][-1].get("content")))
    return word in last.rsplit("[Your sentence]", 1)[-1].split("[Your response]", 1)[0]


@pytest.fixture
def summaries(tmp_path: Path) -> Path:
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def items(server: FakeAnthropicServer, data: Path, tmp: Path, cache: str, *extra: str) -> list[str]:
    return [
        "strategy=none",
        "data=summaries",
        f"data.path={data}",
        "metrics=booookscore",
        "judge=claude",
        f"judge.api_base={server.url}",
        "judge.retry.max_attempts=2",
        "judge.retry.base_delay_s=0.01",
        f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}",
        f"cache.dir={tmp / cache}",
        "progress=off",
        *extra,
    ]


BATCH = ("judge.batch=true", "judge.batch_poll=0.2", "judge.batch_gather=0.5")


def run(overrides: list[str]) -> RunResult:
    return run_experiment(build_run_config(composed(*overrides), tuple(overrides)))


def score(result: RunResult) -> float:
    return result.system_metrics["booookscore/score"]


def test_batch_run_scores_as_online_at_half_the_cost_in_one_batch(
    summaries: Path, tmp_path: Path
) -> None:
    with FakeAnthropicServer(judge, api_key=KEY) as server:
        online = run(items(server, summaries, tmp_path, "online-cache"))
        asked = len(server.online_requests)
        batch = run(items(server, summaries, tmp_path, "batch-cache", *BATCH))
        assert len(server.online_requests) == asked  # the batch run sent nothing online
        assert len(server.batches) == 1
        assert len(server.batches[0].custom_ids) == asked == sentence_count()
    assert score(online) == pytest.approx(expected_booookscore())
    assert score(batch) == pytest.approx(expected_booookscore())
    assert online.totals.cost_usd > 0
    assert batch.totals.cost_usd == pytest.approx(online.totals.cost_usd / 2, rel=1e-9)
    assert batch.totals.calls == online.totals.calls == sentence_count()
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    tags = client.get_run(batch.run_id).data.tags
    assert tags["runner.batch_ids"] == server.batches[0].id
    assert "every batch answered" in tags["runner.batch"]
    assert tags["fingerprint"] == client.get_run(online.run_id).data.tags["fingerprint"]
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []  # not in the ledger, the cache, calls.jsonl, MLflow's store or artifacts
    assert list((tmp_path / "batch-cache" / "batches").glob("anthropic--*.json"))


def test_sigkill_while_waiting_then_rerun_submits_nothing_again(
    summaries: Path, tmp_path: Path
) -> None:
    with FakeAnthropicServer(judge, api_key=KEY, never_end=True) as server:
        overrides = items(server, summaries, tmp_path, "cache", *BATCH)
        child = runner_cli(overrides)
        try:
            deadline = time.monotonic() + 120
            while not (server.batches and Ledger(tmp_path / "cache").live()):
                assert child.poll() is None, child.communicate()
                assert time.monotonic() < deadline, "no batch was submitted"
                time.sleep(0.2)
            waiting = _waiting_run(tmp_path, deadline)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.communicate()
        assert waiting.info.status == "RUNNING"
        assert "waiting" in waiting.data.tags["runner.batch"]
        assert server.batches[0].id in waiting.data.tags["runner.batch"]
        server.never_end = False
        rerun = run(overrides)
        assert len(server.batches) == 1  # the rerun waited for the killed job's batch
        assert server.online_requests == []
    assert score(rerun) == pytest.approx(expected_booookscore())
    assert rerun.totals.cost_usd > 0  # the answers it took from the batch are paid once, here
    entry = Ledger(tmp_path / "cache").find(server.batches[0].id)
    assert entry is not None and entry.collected


def _waiting_run(tmp_path: Path, deadline: float) -> Any:
    """The child's run once its ``runner.batch`` tag says it waits."""
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    while time.monotonic() < deadline:
        runs = client.search_runs(
            [e.experiment_id for e in client.search_experiments()], "tags.`runner.batch` != ''"
        )
        if runs and "waiting" in runs[0].data.tags.get("runner.batch", ""):
            return runs[0]
        time.sleep(0.2)
    raise AssertionError("the waiting run never showed its batch")


def test_a_partly_failed_batch_resubmits_only_the_failed_requests(
    summaries: Path, tmp_path: Path
) -> None:
    def fail(custom_id: str, params: dict[str, Any], attempt: int) -> str | None:
        if attempt == 0 and (is_sentence(params, "Anna") or is_sentence(params, "Ben")):
            return "expired"
        return "errored" if attempt == 0 and is_sentence(params, "dawn") else None

    with FakeAnthropicServer(judge, api_key=KEY, fail=fail) as server:
        result = run(items(server, summaries, tmp_path, "cache", *BATCH))
        first, second = server.batches  # exactly two
        failed = [
            cid
            for cid in first.custom_ids
            if any(is_sentence(first.params[cid], w) for w in ("Anna", "Ben", "dawn"))
        ]
        assert len(failed) == 3
        assert sorted(second.custom_ids) == sorted(failed)
    assert score(result) == pytest.approx(expected_booookscore())
    assert result.totals.calls == sentence_count()


def test_a_batch_that_never_ends_fails_the_run_with_its_id(summaries: Path, tmp_path: Path) -> None:
    with FakeAnthropicServer(judge, api_key=KEY, never_end=True) as server:
        overrides = items(server, summaries, tmp_path, "cache", *BATCH, "judge.batch_timeout=1.5")
        with pytest.raises(BatchError) as caught:
            run(overrides)
        batch_id = server.batches[0].id
    message = str(caught.value)
    assert batch_id in message and "judge.batch_timeout=1.5" in message
    assert "\n" not in message
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (failed,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert failed.info.status == "FAILED"
    assert failed.data.tags["runner.batch_ids"] == batch_id


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            ["strategy=incremental", "model=claude", "model.batch=true", "metrics=stats"],
            ["model.batch=true", "strategy=incremental", "BATCH_ROLES"],
        ),
        (
            [
                "strategy=none",
                "data=summaries",
                "metrics=booookscore",
                "judge=local",
                "judge.batch=true",
            ],
            ["judge.batch=true", "judge=local", "no batch API"],
        ),
        (
            [
                "strategy=none",
                "data=summaries",
                "metrics=booookscore",
                "judge=claude",
                "judge.batch=true",
                "cache.enabled=false",
            ],
            ["judge.batch=true", "cache.enabled=true"],
        ),
        (
            [
                "strategy=none",
                "data=summaries",
                "metrics=booookscore",
                "judge=claude",
                "judge.batch=true",
                "judge.batch_poll=0",
            ],
            ["judge.batch_poll=0", "above 0"],
        ),
    ],
)
def test_batch_settings_that_cannot_work_are_one_line(
    extra: list[str], words: list[str], summaries: Path
) -> None:
    overrides = [*extra, *([f"data.path={summaries}"] if "data=summaries" in extra else [])]
    with pytest.raises(ConfigError) as caught:
        build_run_config(composed(*overrides), tuple(overrides))
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_sweeps_jobs_submit_their_requests_in_one_batch(tmp_path: Path) -> None:
    """Two joblib jobs over different summaries: one pooled batch holds both jobs' requests,
    and each job's score is its own summaries' (counted here)."""
    halves = {"a": dict(list(SUMMARIES.items())[:2]), "b": dict(list(SUMMARIES.items())[2:])}
    for name, part in halves.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(part), encoding="utf-8")
    with FakeAnthropicServer(judge, api_key=KEY) as server:
        overrides = items(server, tmp_path / "a.json", tmp_path, "cache", *BATCH)
        overrides = [o for o in overrides if not o.startswith(("data.path=", "judge.batch_gather"))]
        done = subprocess.run(
            [
                sys.executable, "-m", "runner", "-m", *overrides,
                f"data.path={tmp_path / 'a.json'},{tmp_path / 'b.json'}",
                "judge.batch_gather=5", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
            ],
            cwd=REPO, capture_output=True, text=True, timeout=600,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.batches) == 1, (
            [(b.created_at, [_said(b.params[c]) for c in b.custom_ids]) for b in server.batches],
            done.stderr[-3000:],
        )
        assert len(server.batches[0].custom_ids) == sentence_count()
        assert server.online_requests == []
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    every = client.search_runs([e.experiment_id for e in client.search_experiments()])
    runs = [r for r in every if r.data.tags.get("runner.kind") != "sweep"]
    scores = sorted(r.data.metrics["booookscore/score"] for r in runs)
    expected = []
    for part in halves.values():
        shares = []
        for summary in part.values():
            sentences = re.split(r"(?<=[.!?])\s+", summary.strip())
            shares.append(sum(not any(w in s for w in FLAGGED) for s in sentences) / len(sentences))
        expected.append(100 * sum(shares) / len(shares))
    assert scores == pytest.approx(sorted(expected))
    assert {r.data.tags["runner.batch_ids"] for r in runs} == {server.batches[0].id}
    # each job pays for its own answers, whichever job submitted the pooled batch
    assert all(r.data.metrics["cost_usd"] > 0 for r in runs)


def _said(params: dict[str, Any]) -> str:
    last = " ".join(text_of(params["messages"][-1].get("content")))
    return last.rsplit("[Your sentence]", 1)[-1].split("[Your response]", 1)[0].strip()[:30]


def test_ctrl_c_while_waiting_names_the_batch_left_in_flight(
    summaries: Path, tmp_path: Path
) -> None:
    with FakeAnthropicServer(judge, api_key=KEY, never_end=True) as server:
        child = runner_cli(items(server, summaries, tmp_path, "cache", *BATCH))
        try:
            deadline = time.monotonic() + 120
            while not Ledger(tmp_path / "cache").live():
                assert child.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
        batch_id = server.batches[0].id
    assert child.returncode == 130
    assert f"waiting for batch {batch_id}, which stays in flight" in err
    assert "HTTP Request" not in out + err  # the SDKs' request logs stay quiet
    entry = Ledger(tmp_path / "cache").find(batch_id)
    assert entry is not None and entry.live


def test_a_ledger_folder_it_cannot_make_is_one_line_before_any_run(
    summaries: Path, tmp_path: Path
) -> None:
    with FakeAnthropicServer(judge, api_key=KEY) as server:
        overrides = [
            o for o in items(server, summaries, tmp_path, "cache", *BATCH) if "cache.dir" not in o
        ]
        overrides.append("cache.dir=/proc/no-such-folder")
        with pytest.raises(ConfigError) as caught:
            run(overrides)
        assert server.batches == [] and server.online_requests == []
    assert "/proc/no-such-folder/batches" in str(caught.value)
    assert "set cache.dir" in str(caught.value)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert [
        r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])
    ] == []


def test_a_judges_samples_travel_as_distinct_requests_of_one_batch(
    summaries: Path, tmp_path: Path
) -> None:
    """``judge.samples=2`` in batch mode: each sentence is asked twice in the one batch, under
    two custom_ids (Anthropic takes no seed, so the two bodies are alike), and the answers are
    kept apart. The judge confuses on a sentence's first asking only, so one sample of each
    summary is the flagged score and the other 100: pooled, their mean (counted here)."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def once(params: dict[str, Any]) -> str:
        last = " ".join(text_of(params["messages"][-1].get("content")))
        sentence = last.rsplit("[Your sentence]", 1)[-1]
        with lock:
            seen[sentence] = seen.get(sentence, 0) + 1
            first = seen[sentence] == 1
        return judge(params) if first else "Questions: no confusion\nTypes: no confusion"

    with FakeAnthropicServer(once, api_key=KEY) as server:
        result = run(items(server, summaries, tmp_path, "cache", *BATCH, "judge.samples=2"))
        again = run(items(server, summaries, tmp_path, "cache", *BATCH, "judge.samples=2"))
    assert len(server.batches) == 1 and server.online_requests == []
    sent = server.batches[0].custom_ids
    assert len(sent) == len(set(sent)) == 2 * sentence_count()
    assert set(seen.values()) == {2}  # every sentence asked twice, in the one batch
    assert score(result) == pytest.approx((expected_booookscore() + 100) / 2)
    assert score(again) == score(result) and again.totals.cache_hits == 2 * sentence_count()
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    folder = Path(client.download_artifacts(result.run_id, "samples.json", str(tmp_path)))
    samples = json.loads(folder.read_text(encoding="utf-8"))
    for doc, summary in SUMMARIES.items():
        sentences = re.split(r"(?<=[.!?])\s+", summary.strip())
        flagged = 100 * sum(not any(w in s for w in FLAGGED) for s in sentences) / len(sentences)
        drawn = samples[doc]["booookscore"]
        assert sorted(s["values"]["score"] for s in drawn) == pytest.approx(sorted([flagged, 100]))
