"""The resuming sweeper as Hydra finds it, and the one rule that says a cell is done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from runner.sweep.outcome import JobOutcome, failure_message, failures
from runner.tracking import sqlite_peek
from runner.tracking.tags import FAILED_DOCUMENTS_TAG, PARENT_TAG

REPO = Path(__file__).resolve().parents[3]
SWEEPER = "hydra_plugins.summarization_runner_sweeper.resuming_sweeper.ResumingSweeper"

DISCOVER = """
import json, sys
from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
ours_before = sorted(m for m in sys.modules if m.split(".")[0] in ("runner", "hydra_plugins"))
found = [f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover(Sweeper)]
node = ConfigStore.instance().load("hydra/sweeper/resuming.yaml").node
print(json.dumps({"before": ours_before, "found": found, "target": node._target_}))
"""


def test_hydra_discovers_the_sweeper_without_our_code_registering_it(tmp_path: Path) -> None:
    """A fresh interpreter in a folder away from the repository (so only the installed package
    can be found) imports nothing of ours before Hydra's plugin scan, which then lists the
    sweeper and its config ``hydra/sweeper=resuming``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", DISCOVER],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    ).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["before"] == []
    assert SWEEPER in seen["found"]
    assert seen["target"] == SWEEPER


def test_the_runner_config_selects_the_resuming_sweeper() -> None:
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        config = compose("config", return_hydra_config=True)
    assert config.hydra.sweeper._target_ == SWEEPER
    assert config.hydra.runtime.choices["hydra/sweeper"] == "resuming"


def test_no_code_of_ours_registers_plugins_or_patches_hydra() -> None:
    for path in [
        *REPO.joinpath("runner").rglob("*.py"),
        *REPO.joinpath("hydra_plugins").rglob("*.py"),
    ]:
        text = path.read_text(encoding="utf-8")
        # The one use of Hydra's plugin registry: making the configured launcher, as every
        # sweeper plugin of Hydra's does (nothing registered, nothing discovered by hand).
        uses = text.split("Plugins.instance()")[1:]
        assert all(use.startswith(".instantiate_launcher(") for use in uses), path
        assert "class_name_to_class" not in text, path
    assert not (REPO / "hydra_plugins" / "__init__.py").exists()  # a namespace package


def test_outcomes_make_the_exit_message() -> None:
    good, bad = JobOutcome("seed=0"), JobOutcome("seed=1", "server error 500")
    assert good.ok and not bad.ok
    assert failures([good, None, "not ours", bad]) == [bad]
    assert failure_message([bad]).endswith("first: seed=1: server error 500")
    assert failure_message([bad]).startswith("error: 1 job(s) of the sweep failed")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """A real sqlite store: a sweep's parent and children in every state that matters."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("summarization")
    ids: dict[str, str] = {}

    def run(name: str, start: int, status: str | None, **tags: str) -> None:
        made = client.create_run(experiment, start_time=start, tags=tags, run_name=name)
        if status:
            client.set_terminated(made.info.run_id, status)
        ids[name] = made.info.run_id

    run("parent", 0, None, **{"runner.kind": "sweep"})
    run("other", 1, None, **{"runner.kind": "sweep"})
    p, o = ids["parent"], ids["other"]
    child = {PARENT_TAG: p}
    run("a-old", 10, "FINISHED", fingerprint="a", **child)
    run("a-new", 20, "FINISHED", fingerprint="a", **child, **{FAILED_DOCUMENTS_TAG: "1"})
    run("b", 10, "FINISHED", fingerprint="b", **child)
    run("b-killed", 30, "KILLED", fingerprint="b", **child)
    run("b-running", 40, None, fingerprint="b", **child)
    run("c", 10, "FAILED", fingerprint="c", **child)
    run("d", 10, "FINISHED", fingerprint="d", **{PARENT_TAG: o})
    run("e", 10, "FINISHED", fingerprint="e", **child)
    run(
        "e-deleted",
        50,
        "FINISHED",
        fingerprint="e",
        **child,
        **{FAILED_DOCUMENTS_TAG: "2"},
    )
    client.delete_run(ids["e-deleted"])
    run("f", 10, "FINISHED", fingerprint="f")  # outside any sweep
    return uri, ids


CASES = [
    ("parent", "a", None),  # its newest FINISHED run skipped a failed document
    ("parent", "b", "b"),  # newer KILLED and RUNNING runs do not undo a FINISHED one
    ("parent", "c", None),  # only FAILED
    ("parent", "d", None),  # done in another sweep only
    ("parent", "e", "e"),  # a deleted newer run does not count
    ("parent", "f", None),
    ("parent", "zzz", None),
    ("other", "d", "d"),
    (None, "d", "d"),  # anywhere in the experiment
    (None, "f", "f"),
    (None, "a", None),
    (None, "b", "b"),
    (None, "c", None),
    (None, "e", "e"),
]


@pytest.mark.parametrize(("parent", "fingerprint", "expected"), CASES)
def test_one_rule_says_a_cell_is_done_from_sqlite_and_from_mlflow(
    store: tuple[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    parent: str | None,
    fingerprint: str,
    expected: str | None,
) -> None:
    uri, ids = store
    sweep = ids[parent] if parent else None
    want = ids[expected] if expected else None
    assert sqlite_peek._sqlite_rows(uri, "summarization", sweep, fingerprint) is not None
    from_sqlite = sqlite_peek.done_cell(uri, "summarization", sweep, fingerprint)
    with monkeypatch.context() as patched:
        patched.setattr(sqlite_peek, "_sqlite_file", lambda uri: None)  # MLflow's own query
        from_mlflow = sqlite_peek.done_cell(uri, "summarization", sweep, fingerprint)
    assert from_sqlite == from_mlflow == want
    if parent is None:  # the reader's own MLflow query keeps the same rule
        from runner.tracking.reader import finished_run

        assert finished_run(uri, "summarization", fingerprint) == want


def test_the_whole_sweep_at_once_agrees_too(
    store: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, ids = store
    from_sqlite = sqlite_peek.done_cells(uri, "summarization", ids["parent"])
    monkeypatch.setattr(sqlite_peek, "_sqlite_file", lambda uri: None)
    assert from_sqlite == sqlite_peek.done_cells(uri, "summarization", ids["parent"])
    assert from_sqlite == {"b": ids["b"], "e": ids["e"]}
    assert sqlite_peek.done_cells(uri, "no-such-experiment", None) == {}
