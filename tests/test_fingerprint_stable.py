"""A run's fingerprint does not depend on where the code lives.

The fingerprint names an experiment: sweeps skip cells whose FINISHED run has it, and MLflow
runs carry it. ``data/fingerprints.json`` holds the fingerprints the code computed before
``runner/`` was split into concept subpackages (commit 72cd531); the same configs must give
the same values, or every finished sweep would run again. One value changed since, on
purpose: SummIt's fingerprint now hashes its drafting strategies' prompts too (an edited hier
prompt must rerun a finished ``strategy=summit`` cell, which drafts with hier), so
``strategy=summit`` moved from 8e8c7a6955958a7b to 8eaf09243324615b. And the article's
metrics (``metrics=article``) moved from f21904c7ccd6d0e4 to 6f9f02dd7ed260c2: their judge
temperature became null (the judge's own, ``judge.temperature``) instead of a pinned 0, so
that ``judge.temperature=0.7`` reaches them; with the shipped judges (all at 0) the requests
are the same and a rerun of such a cell is answered from the response cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.config.fingerprint import fingerprint, prompt_files
from runner.config.run_config import build_run_config
from tests.runner.config.test_config import composed

GOLDEN = Path(__file__).resolve().parent / "data" / "fingerprints.json"
CONFIGS: list[tuple[str, ...]] = [
    (),
    ("strategy=hier",),
    ("strategy=incremental", "chunk=1024"),
    ("strategy=summit",),
    ("model=claude", "strategy=hier", "chunk=2048"),
    ("model=gpt4", "judge=gpt4", "strategy=incremental", "metrics=paper"),
    ("model=openai_compatible", "model.api_base=http://127.0.0.1:8000/v1", "metrics=article"),
    ("strategy=hier", "metrics=stats", "seed=3", "repeat=1"),
]


@pytest.mark.parametrize("items", CONFIGS, ids=[" ".join(c) or "(defaults)" for c in CONFIGS])
def test_the_fingerprint_is_the_one_the_code_gave_before_the_move(items: tuple[str, ...]) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    config = build_run_config(composed(*items), items)
    assert fingerprint(config, prompt_files(config)) == golden[" ".join(items) or "(defaults)"]


def test_summit_fingerprints_the_prompts_of_the_strategy_that_drafts_for_it() -> None:
    """SummIt drafts a long document with hier (``draft=hier``): hier's prompts are its inputs."""
    config = build_run_config(composed("strategy=summit"), ("strategy=summit",))
    files = prompt_files(config)
    assert "strategies/prompts/hier/paper/merge.txt" in files
    assert "strategies/prompts/summit/refine.txt" in files
