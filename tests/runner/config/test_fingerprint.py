"""The fingerprint changes with what changes results, and only with that."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.config.fingerprint import fingerprint, prompt_files
from runner.config.run_config import build_run_config
from runner.errors import ConfigError
from tests.runner.config.test_config import composed


def fp(*overrides: str) -> str:
    config = build_run_config(composed(*overrides))
    return fingerprint(config, prompt_files(config))


def test_a_prompt_file_outside_the_repo_is_logged_and_hashed(tmp_path: Path) -> None:
    prompt = tmp_path / "my-judge-prompt.txt"
    prompt.write_text("Summary:\n{}\nSentence:\n{}\n", encoding="utf-8")
    key = f"metrics.booookscore.prompt_path={prompt}"
    config = build_run_config(composed(key))
    files = prompt_files(config)
    assert files["prompts/metrics.booookscore.prompt_path/my-judge-prompt.txt"] == prompt.resolve()
    before = fp(key)
    assert fp(key) == before  # deterministic
    prompt.write_text("Summary:\n{}\nThe sentence:\n{}\n", encoding="utf-8")
    assert fp(key) != before  # same path, new words: a new experiment


def test_the_bundled_prompts_are_hashed() -> None:
    files = prompt_files(build_run_config(composed("strategy=hier")))
    assert "strategies/prompts/hier/paper/merge.txt" in files
    assert "metrics/prompts/booookscore/sentence.txt" in files
    assert "strategies/prompts/common/remove_artifacts.txt" in files


@pytest.mark.parametrize(
    "same",
    [
        "model.concurrency=3",
        "model.timeout_s=5",
        "model.retry.max_attempts=9",
        "progress=true",
        "tracking.experiment=other",
        "cache.dir=/tmp/elsewhere",
        "judge.concurrency=2",
    ],
)
def test_settings_that_cannot_change_results_leave_it_alone(same: str) -> None:
    assert fp("model=gpt4", same) == fp("model=gpt4")


@pytest.mark.parametrize(
    "different",
    [
        "chunk=1024",
        "temperature=0.2",
        "model.temperature=0.1",
        "seed=1",
        "data.limit=1",
        "strategy.max_summary_len=600",
        "metrics.booookscore.batch_size=4",
        "judge=gpt35",
        "model=claude",
    ],
)
def test_settings_that_change_results_change_it(different: str) -> None:
    assert fp("model=gpt4", different) != fp("model=gpt4")


def test_a_role_the_job_does_not_use_is_not_part_of_it() -> None:
    assert fp("metrics=stats", "judge=gpt35") == fp("metrics=stats", "judge=gpt4")


def test_a_missing_prompt_file_is_a_config_error(tmp_path: Path) -> None:
    config = build_run_config(composed(f"metrics.booookscore.prompt_path={tmp_path / 'nope.txt'}"))
    with pytest.raises(ConfigError, match="nope.txt does not exist"):
        prompt_files(config)


def test_a_geval_steps_file_is_hashed_but_the_official_steps_name_is_not_a_file(
    tmp_path: Path,
) -> None:
    steps = tmp_path / "steps.yaml"
    steps.write_text("coherence: |\n  1. Read the article.\n", encoding="utf-8")
    key = f"metrics.geval.steps={steps}"
    before = fp("metrics=geval", key)
    steps.write_text("coherence: |\n  1. Read the summary first.\n", encoding="utf-8")
    assert fp("metrics=geval", key) != before
    assert not any(
        name.startswith("prompts/metrics.geval.steps")
        for name in prompt_files(
            build_run_config(composed("metrics=geval", "metrics.geval.steps=official"))
        )
    )


def test_f1_logs_and_hashes_the_prompts_of_the_metrics_it_builds() -> None:
    files = prompt_files(build_run_config(composed("metrics=f1")))
    assert "metrics/prompts/alignment/verdict.txt" in files
    assert "metrics/prompts/coverage/questions.txt" in files
