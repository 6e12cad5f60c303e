"""A researcher's first day with their own data and key: no silent wrong results.

Each case is one that once ended in a FINISHED run a report would count, or in a message that
misled: a data path the chosen source ignored, a negative limit, the embedded judge scoring an
API model's summaries, a sweep preset run as one job, a provider's host retried for 30 s with
advice for a local server, a sweep parent FINISHED over failed children, a typo in a swept
value leaving a parent RUNNING, a YAML error as a 95-line traceback, ``-m`` after overrides.
Every test runs the real command or the real gateway against loopback servers: the sweeps as
child processes, the other commands in this process (``tests/helpers/in_process.py``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import ProviderUnreachableError
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply
from tests.helpers.in_process import run_in_process
from tests.runner.config.test_config import composed

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "runner" / "sample_data"


def runner(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGS`` in ``cwd`` with no API key in the environment."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**clean, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})},
    )


def command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command of ``python -m runner ARGS`` called in this process, in ``cwd``, with no API
    key in the environment (a sweep's jobs may run in processes of their own: ``runner``)."""
    return run_in_process(*args, cwd=cwd)


def served(url: str, *extra: str) -> list[str]:
    """Overrides for a run against the loopback server: quick, one document, no judge."""
    return [
        "model=openai_compatible",
        f"model.api_base={url}",
        "model.retry.max_attempts=2",
        "model.retry.base_delay_s=0.01",
        "metrics=stats",
        "data.limit=1",
        *extra,
    ]


def runs(uri: str) -> list[Any]:
    client = MlflowClient(uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    return list(client.search_runs(ids, max_results=1000)) if ids else []


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    return lines[0]


# ----------------------------------------------------------------------------- data


def test_a_data_path_the_sample_source_ignores_is_refused(tmp_path: Path) -> None:
    books = tmp_path / "books"
    books.mkdir()
    (books / "mine.txt").write_text("My own book. It has two sentences.\n", encoding="utf-8")
    line = one_error_line(command(f"data.path={books}", "metrics=stats", cwd=tmp_path))
    assert f"data.path={books} is ignored by data=sample" in line and "data=dir" in line
    assert not (tmp_path / "mlruns").exists()


@pytest.mark.parametrize("limit", ["-1", "0", "1.5"])
def test_a_limit_that_is_not_a_positive_count_is_refused(limit: str, tmp_path: Path) -> None:
    line = one_error_line(command(f"data.limit={limit}", "metrics=stats", cwd=tmp_path))
    assert f"data.limit={limit}" in line and ">= 1" in line and "data.limit=null" in line


def test_a_sources_key_outside_data_summaries_is_refused(tmp_path: Path) -> None:
    line = one_error_line(
        command(
            "data=dir",
            f"data.path={SAMPLE}",
            f"+data.sources={SAMPLE}",
            "metrics=stats",
            cwd=tmp_path,
        )
    )
    assert "data.sources is for data=summaries only" in line


# ----------------------------------------------------------------------------- judge


def test_an_api_summarizer_is_never_judged_by_the_embedded_model_by_default() -> None:
    raw = composed("model=claude", "metrics=paper")
    assert raw["judge"]["model"] == raw["model"]["model"] == "anthropic/claude-sonnet-4-5-20250929"
    assert raw["judge"]["temperature"] == 0.0 and raw["judge"]["api_key_env"] == "ANTHROPIC_API_KEY"
    assert (
        raw["judge"]["system_prompt"] is None and raw["judge"]["stop_on_copied_sentence"] is False
    )


def test_the_judge_follows_the_summarizers_server_and_an_explicit_judge_wins() -> None:
    raw = composed("model=openai_compatible", "model.api_base=http://127.0.0.1:9999/v1")
    assert raw["judge"]["api_base"] == "http://127.0.0.1:9999/v1"
    assert composed("model=claude", "judge=gpt4")["judge"]["model"] == "openai/gpt-4-0613"


def test_the_default_local_judge_is_the_one_judge_local_composes() -> None:
    """model=local keeps the judge it had (same settings, so the same fingerprint)."""
    assert composed()["judge"] == composed("judge=local")["judge"]


def test_a_missing_key_names_the_judge_too(tmp_path: Path) -> None:
    line = one_error_line(command("model=claude", "metrics=paper", cwd=tmp_path))
    assert "ANTHROPIC_API_KEY" in line


def test_the_run_description_and_summary_name_the_judge(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with FakeOpenAIServer(judge_or_echo) as server:
        done = command(
            *served(server.url, "metrics=booookscore", f"tracking.uri={uri}"), cwd=tmp_path
        )
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = runs(uri)
    note = run.data.tags["mlflow.note.content"]
    assert "judge=openai_compatible (the summarizer's own model)" in note
    assert "judge=openai_compatible (the summarizer's own model)" in done.stdout


def judge_or_echo(request: dict[str, Any]) -> str:
    """A clean BooookScore verdict for judge prompts, a one-sentence summary otherwise."""
    if "[Your sentence]" in str(request["messages"][-1]["content"]):
        return "Questions: no confusion\nTypes: no confusion"
    return "A keeper writes in his ledger and the storm passes."


# ----------------------------------------------------------------------------- end of a run


def test_the_end_of_a_run_says_where_the_summaries_and_viewer_are(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = command(*served(server.url), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    paths = {
        line.split(":", 1)[0].strip(): line.split(":", 1)[1].split()[0]
        for line in done.stdout.splitlines()
        if line.strip().startswith(("summaries:", "viewer:"))
    }
    assert Path(paths["summaries"]).is_file() and Path(paths["viewer"]).is_file()
    assert (
        Path(paths["viewer"])
        .read_text(encoding="utf-8")
        .lstrip()
        .lower()
        .startswith("<!doctype html")
    )
    header = next(line for line in done.stdout.splitlines() if line.strip().startswith("document"))
    assert "% repeated trigrams" in header and "Avg length (tokens)" in header  # titles not cut


def test_the_per_document_column_says_booookscore() -> None:
    from runner.llm.call_log import CallTotals
    from runner.plugins import values as value_facts
    from runner.run.console import format_summary
    from runner.run.lifecycle import RunResult

    declared = value_facts.recorded({}, {"metrics": "booookscore"})  # its VALUES, via registry
    result = RunResult(
        "r1",
        "defaults",
        {"a": "s"},
        {"booookscore/score": 80.0},
        CallTotals(),
        "sqlite:///x",
        per_document={"a": {"booookscore/score": 80.0}},
        headline=("booookscore/score",),
        titles={k: v.title for k, v in declared.items() if v.title},  # as the job passes them
    )
    text = format_summary(result)
    header = next(line for line in text.splitlines() if line.strip().startswith("document"))
    assert header.split()[-1] == "BooookScore" and "BooookScore (booookscore/score)" in text


# ----------------------------------------------------------------------------- sweeps


def test_a_sweep_preset_runs_as_a_sweep_without_dash_m() -> None:
    from hydra import compose, initialize_config_dir
    from hydra.types import RunMode

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        for preset in ("local_demo", "paper_table2", "summit_ablation"):
            cfg = compose("config", [f"+experiment={preset}"], return_hydra_config=True)
            assert cfg.hydra.mode == RunMode.MULTIRUN, preset


def test_dash_m_after_the_overrides_starts_the_sweep(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with FakeOpenAIServer() as server:
        done = runner(
            "strategy=hier",
            *served(server.url, f"tracking.uri={uri}"),
            "-m",
            "chunk=256,512",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    children = [r for r in runs(uri) if r.data.tags.get("mlflow.parentRunId")]
    assert sorted(r.data.params["chunk"] for r in children) == ["256", "512"]
    assert "python -m runner.report" in done.stderr + done.stdout


def test_a_typo_in_a_swept_value_is_refused_before_any_run_exists(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = runner("-m", "strategy=baseline,baselin", *served(server.url), cwd=tmp_path)
    line = one_error_line(done)
    assert "strategy=baselin" in line and "hier" in line and "nothing was run" in line
    assert not (tmp_path / "mlruns").exists() and server.requests == []


def test_a_sweep_with_no_key_makes_no_parent(tmp_path: Path) -> None:
    line = one_error_line(
        runner("-m", "model=claude", "strategy=baseline,hier", "metrics=stats", cwd=tmp_path)
    )
    assert "ANTHROPIC_API_KEY" in line
    assert not (tmp_path / "mlruns").exists()


def test_a_sweep_with_a_failed_child_ends_its_parent_failed(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"

    def refuse_hot(request: dict[str, Any]) -> str | FakeReply:
        if request.get("temperature") == 0.9:
            return FakeReply(status=400, text="temperature 0.9 is not allowed here")
        return "A short summary of the story."

    with FakeOpenAIServer(refuse_hot) as server:
        done = runner(
            "-m",
            "model.temperature=0.1,0.9",
            *served(server.url, f"tracking.uri={uri}"),
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            cwd=tmp_path,
        )
    assert done.returncode == 1, done.stderr[-2000:]
    parent = next(r for r in runs(uri) if r.data.tags.get("runner.kind") == "sweep")
    assert parent.info.status == "FAILED"
    assert parent.data.tags["failure"].startswith("1 of 2 jobs failed")
    assert parent.data.tags["runner.children"] in ("1 FINISHED, 1 FAILED", "1 FAILED, 1 FINISHED")
    assert "1 job(s) of the sweep failed" in done.stderr


# ----------------------------------------------------------------------------- messages


def test_a_yaml_error_in_the_users_config_dir_is_one_line_with_its_place(tmp_path: Path) -> None:
    mine = tmp_path / "my_conf" / "model"
    mine.mkdir(parents=True)
    (mine / "broken.yaml").write_text(
        "name: broken\nmodel: [openai/x\ntemperature: 0.2\n", encoding="utf-8"
    )
    line = one_error_line(
        command("--config-dir", str(tmp_path / "my_conf"), "model=broken", cwd=tmp_path)
    )
    assert "broken.yaml" in line and "line 3" in line and "column" in line


def test_help_lists_only_the_groups_a_user_chooses(tmp_path: Path) -> None:
    done = command("--help", cwd=tmp_path)
    assert done.returncode == 0 and "strategy:" in done.stdout and "judge:" in done.stdout
    assert "model_strategy" not in done.stdout


def test_reports_are_git_ignored() -> None:
    done = subprocess.run(
        ["git", "check-ignore", "-q", "reports/summarization-all/table.md"], cwd=REPO
    )
    assert done.returncode == 0, "reports/ (the report's default output) is not git-ignored"


# ----------------------------------------------------------------------------- a provider's host


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_provider_host_that_refuses_fails_at_once_with_network_advice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The provider's own host (no api_base), redirected by litellm's ANTHROPIC_API_BASE to a
    closed loopback port: one attempt, a message about network and proxy, not 'start the server'."""
    from runner.config.run_config import model_spec
    from runner.llm.call_log import CallLog
    from runner.llm.gateway import Gateway
    from runner.llm.stop import Stop

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-for-test")
    monkeypatch.setenv("ANTHROPIC_API_BASE", f"http://127.0.0.1:{_closed_port()}")
    spec = model_spec(composed("model=claude")["model"], "model")
    gateway = Gateway(spec, CallLog(None), None, 0, None, role="model", cancel=Stop())
    attempts: list[object] = []
    attempt = Gateway._attempt
    monkeypatch.setattr(
        Gateway, "_attempt", lambda self, kwargs: attempts.append(kwargs) or attempt(self, kwargs)
    )
    with pytest.raises(ProviderUnreachableError) as caught:
        gateway.complete("Say hello.")
    assert len(attempts) == 1  # not the six attempts with backoff (30 s) it once made
    message = str(caught.value)
    assert "network" in message and "HTTPS_PROXY" in message and "start the server" not in message


def test_a_name_resolution_failure_under_litellms_wrapping_is_not_retried() -> None:
    import litellm

    from runner.llm.provider_errors import translate

    try:
        try:
            raise socket.gaierror(-2, "Name or service not known")
        except socket.gaierror as inner:
            raise litellm.InternalServerError("Connection error.", "anthropic", "claude") from inner
    except litellm.InternalServerError as caught:
        err = caught
    translated = translate(err, "model", "claude", None, "anthropic/claude-sonnet-4-5")
    assert isinstance(translated, ProviderUnreachableError) and not translated.retryable
    assert "anthropic's API" in str(translated) and "Name or service not known" in str(translated)
    with_base = translate(err, "model", "mine", "http://127.0.0.1:9/v1", "openai/x")
    assert with_base.retryable and "start the server" in str(with_base)
