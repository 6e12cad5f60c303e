"""The fingerprint changes with what changes results, and only with that."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.api.errors import ConfigError
from runner.config.fingerprint import fingerprint, prompt_files
from runner.config.run_config import build_run_config
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


def test_a_researchers_plugin_names_the_parameters_whose_files_are_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``FILE_PARAMS``: the fingerprint asks the plugin, as it asks G-Eval; a parameter it does
    not list is a value, even when a file of that name exists."""
    import sys

    from runner.plugins.registry import load

    (tmp_path / "glossed.py").write_text(
        "from runner.api import StrategyResult\n"
        "ROLES = ()\nIGNORES = {}\nPROMPT_DIRS = ()\nFILE_PARAMS = ('glossary',)\n"
        "def summarize(chunks, *, glossary=None, note=None):\n"
        "    return StrategyResult('', [], {})\n",
        encoding="utf-8",
    )
    glossary, note = tmp_path / "glossary.txt", tmp_path / "note.txt"
    glossary.write_text("ferry: a boat\n", encoding="utf-8")
    note.write_text("first\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    load.cache_clear()
    monkeypatch.delitem(sys.modules, "glossed", raising=False)
    items = (
        "strategy=none",
        "strategy.name=glossed",
        f"+strategy.glossary={glossary}",
        f"+strategy.note={note}",
        "metrics=none",
    )
    files = prompt_files(build_run_config(composed(*items)))
    assert files["prompts/strategy.glossary/glossary.txt"] == glossary.resolve()
    assert not any("note" in name for name in files)
    before = fp(*items)
    note.write_text("second\n", encoding="utf-8")
    assert fp(*items) == before  # not listed: its path is the value, its content is not read
    glossary.write_text("ferry: a ship\n", encoding="utf-8")
    assert fp(*items) != before
    load.cache_clear()
