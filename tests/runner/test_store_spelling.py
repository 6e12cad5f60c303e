"""One spelling for the store: ``tracking.uri=URI`` in every command, ``--tracking-uri URI`` too.

Each command is checked on what it reads: a store that is not there is named by the path
given (not the default one under the current folder), and a store made here with MLflow's own
client is found through either spelling (its run id, or its experiment's runs). Both
spellings with different values are one line and exit 2, in every command.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from mlflow.tracking import MlflowClient

from runner import batches
from runner.annotate.__main__ import main as annotate
from runner.config.folders import SpellingError, store_given, store_override
from runner.view import cli as view
from tests.helpers.fake_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Store:
    """A sqlite store made with MLflow's client: one FINISHED run, no artifacts."""

    uri: str
    path: Path
    run_id: str


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    folder = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment(
        "summarization", artifact_location=str(folder / "artifacts")
    )
    run = client.create_run(experiment).info.run_id
    client.set_terminated(run, "FINISHED")
    return Store(uri, folder / "mlflow.db", run)


def command(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m <module> ARGS`` in ``cwd`` (a folder with no store of its own)."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    return lines[0]


# ------------------------------------------------------------------ the words


@pytest.mark.parametrize(
    "argv",
    [
        ["--tracking-uri", "sqlite:///a/mlflow.db", "x=1"],
        ["--tracking-uri=sqlite:///a/mlflow.db", "x=1"],
        ["tracking.uri=sqlite:///a/mlflow.db", "x=1"],
        ["tracking.uri=sqlite:///a/mlflow.db", "x=1", "--tracking-uri", "sqlite:///a/mlflow.db"],
    ],
)
def test_every_spelling_gives_the_same_store(argv: list[str]) -> None:
    assert store_given(argv) == (["x=1"], "sqlite:///a/mlflow.db")


def test_no_store_given_leaves_the_words_alone() -> None:
    assert store_given(["strategy=hier", "-m"]) == (["strategy=hier", "-m"], None)
    assert store_override(["strategy=hier", "-m"]) == ["strategy=hier", "-m"]


def test_two_different_stores_name_both() -> None:
    with pytest.raises(SpellingError, match="tracking.uri=a and --tracking-uri b"):
        store_given(["tracking.uri=a", "--tracking-uri", "b"])
    with pytest.raises(SpellingError, match="--tracking-uri needs a value"):
        store_given(["x=1", "--tracking-uri"])


@pytest.mark.parametrize(
    "value", ["sqlite:////tmp/runs/mlflow.db", "sqlite:////tmp/my runs,v2/mlflow.db", "it's"]
)
def test_the_flag_becomes_an_override_hydra_reads_back_as_the_value(value: str) -> None:
    words = store_override(["-m", "--tracking-uri", value, "strategy=hier"])
    assert words[0] == "-m" and words[2] == "strategy=hier"
    parsed = OverridesParser.create().parse_overrides([words[1]])[0]
    assert parsed.key_or_group == "tracking.uri" and parsed.value() == value


def test_a_users_own_override_is_kept_as_typed() -> None:
    words = store_override(["+tracking.uri='x y'", "--tracking-uri", "x y"])
    assert words == ["+tracking.uri='x y'"]


# ------------------------------------------------------------------ python -m runner


@pytest.mark.parametrize("spelling", ["flag", "flag=", "key"])
def test_the_runner_composes_the_store_given_either_way(tmp_path: Path, spelling: str) -> None:
    uri = f"sqlite:///{tmp_path / 'my runs' / 'mlflow.db'}"
    args = {
        "flag": ["--tracking-uri", uri],
        "flag=": [f"--tracking-uri={uri}"],
        "key": [f"tracking.uri='{uri}'"],
    }[spelling]
    done = command("runner", *args, "--cfg", "job", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert yaml.safe_load(done.stdout)["tracking"]["uri"] == uri  # YAML may fold a long value


def test_a_job_given_the_store_by_flag_logs_its_run_there(tmp_path: Path) -> None:
    """A real job against the loopback server: its run is in the store given, none in ./mlruns."""
    store = tmp_path / "my runs" / "mlflow.db"
    with FakeOpenAIServer() as server:
        done = command(
            "runner",
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "metrics=stats",
            "data.limit=1",
            "progress=off",
            "--tracking-uri",
            f"sqlite:///{store}",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    client = MlflowClient(f"sqlite:///{store}")
    experiments = [e.experiment_id for e in client.search_experiments()]
    assert len(client.search_runs(experiments)) == 1
    assert not (tmp_path / "mlruns").exists()


def test_the_runner_refuses_two_stores(tmp_path: Path) -> None:
    line = one_error_line(
        command(
            "runner",
            "tracking.uri=sqlite:///a.db",
            "--tracking-uri",
            "sqlite:///b.db",
            cwd=tmp_path,
        )
    )
    assert "tracking.uri=sqlite:///a.db" in line and "--tracking-uri sqlite:///b.db" in line


def test_the_runners_help_names_the_store_by_its_one_spelling(tmp_path: Path) -> None:
    done = command("runner", "--help", cwd=tmp_path)
    store = done.stdout.split("== The store ==")[1].split("==")[0]
    assert store.lstrip().startswith("tracking.uri=URI")


# ------------------------------------------------------------------ python -m runner.report


@pytest.mark.parametrize("spelling", ["flag", "flag=", "key"])
def test_the_report_reads_the_store_given(tmp_path: Path, spelling: str) -> None:
    missing = tmp_path / "elsewhere" / "mlflow.db"
    uri = f"sqlite:///{missing}"
    args = {"flag": ["--tracking-uri", uri], "flag=": [f"--tracking-uri={uri}"]}
    line = one_error_line(
        command("runner.report", *args.get(spelling, [f"tracking.uri={uri}"]), cwd=tmp_path)
    )
    assert f"no store at {missing}" in line
    assert not missing.exists() and not (tmp_path / "mlruns").exists()


def test_the_report_finds_the_runs_of_a_store_given_by_flag(tmp_path: Path, store: Store) -> None:
    """The store's one run has no metric of the table: the report says so of *its* runs."""
    done = command("runner.report", "--tracking-uri", store.uri, f"out={tmp_path}", cwd=tmp_path)
    assert done.returncode == 2 and "is in the selected runs" in done.stderr, done.stderr[-2000:]


def test_the_report_refuses_two_stores(tmp_path: Path) -> None:
    line = one_error_line(
        command(
            "runner.report",
            "--tracking-uri=sqlite:///a.db",
            "tracking.uri=sqlite:///b.db",
            cwd=tmp_path,
        )
    )
    assert "given twice" in line


# ------------------------------------------------------------------ python -m runner.view


def _page(client: object, run_id: str) -> str:
    return f"<p>{run_id}</p>"


@pytest.mark.parametrize("spelling", ["flag", "flag=", "key"])
def test_the_viewer_reads_the_store_given(
    tmp_path: Path, store: Store, spelling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page.html"
    args = {
        "flag": ["--tracking-uri", store.uri],
        "flag=": [f"--tracking-uri={store.uri}"],
        "key": [f"tracking.uri={store.uri}"],
    }[spelling]
    assert view.main(_page, ["latest", *args, f"out={out}"]) == 0, capsys.readouterr().err
    assert out.read_text() == f"<p>{store.run_id}</p>"


def test_the_viewer_names_a_missing_store_given_by_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "elsewhere" / "mlflow.db"
    assert view.main(_page, ["latest", "--tracking-uri", f"sqlite:///{missing}"]) == 2
    assert f"no store at {missing}" in capsys.readouterr().err
    assert not missing.exists()


def test_the_viewer_refuses_two_stores(capsys: pytest.CaptureFixture[str]) -> None:
    assert view.main(_page, ["latest", "tracking.uri=a", "--tracking-uri", "b"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "given twice" in lines[0]


def test_the_viewers_help_lists_every_option_with_its_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert view.main(_page, ["--help"]) == 0
    shown = capsys.readouterr().out
    for key, text in view.OPTIONS.items():
        assert f"  {key}={view.METAVARS[key]}  " in shown and text in shown
        assert f"[{key}={view.METAVARS[key]}]" in view.USAGE
    assert isinstance(view.OPTIONS, dict) and "tracking.uri" in view.OPTIONS


def test_the_viewer_still_refuses_an_unknown_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert view.main(_page, ["latest", "--colour=blue"]) == 2
    assert "--colour is not an option" in capsys.readouterr().err


# ------------------------------------------------------------------ python -m runner.annotate


@pytest.mark.parametrize("spelling", ["flag", "flag=", "key"])
def test_annotate_reads_the_store_given(
    tmp_path: Path, store: Store, spelling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The store's run exists but has no summaries: only a command reading *that* store says so."""
    args = {
        "flag": ["--tracking-uri", store.uri],
        "flag=": [f"--tracking-uri={store.uri}"],
        "key": [f"tracking.uri={store.uri}"],
    }[spelling]
    out = tmp_path / "tasks"
    code = annotate(["export", "coherence", store.run_id, "--out", str(out), *args])
    err = capsys.readouterr().err
    assert code == 2 and f"run {store.run_id} has no summaries.json" in err, err


def test_annotate_names_a_missing_store_given_by_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "elsewhere" / "mlflow.db"
    code = annotate(
        [
            "export",
            "coherence",
            "0" * 32,
            "--out",
            str(tmp_path),
            f"tracking.uri=sqlite:///{missing}",
        ]
    )
    assert code == 2 and f"no store at {missing}" in capsys.readouterr().err
    assert not missing.exists()


def test_annotate_refuses_two_stores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = annotate(
        ["import", "x.json", "--tracking-uri", "sqlite:///a.db", "tracking.uri=sqlite:///b.db"]
    )
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1 and "given twice" in lines[0]


def test_annotates_help_shows_the_one_spelling() -> None:
    for name in ("export", "import"):
        sub = annotate_subparser(name)
        page = sub.format_help()
        assert "[tracking.uri=URI]" in page and "tracking.uri=URI: the MLflow store" in page
        assert "--tracking-uri URI " not in page.split("tracking.uri=URI: ")[0]


def annotate_subparser(name: str) -> argparse.ArgumentParser:
    """The ``export`` or ``import`` parser of ``python -m runner.annotate``."""
    from runner.annotate.__main__ import parser

    commands = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    chosen = commands[0].choices[name]
    assert isinstance(chosen, argparse.ArgumentParser)
    return chosen


# ------------------------------------------------------------------ python -m runner.batches


def test_batches_take_the_cache_in_either_spelling_and_refuse_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["--cache-dir", str(tmp_path)], [f"cache.dir={tmp_path}"]):
        assert batches.main(args) == 0
        assert (
            f"no batches in flight in {(tmp_path / 'batches').resolve()}" in capsys.readouterr().out
        )
    assert batches.main([f"cache.dir={tmp_path}", "--cache-dir", str(tmp_path / "other")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "cache.dir is given twice" in lines[0]
