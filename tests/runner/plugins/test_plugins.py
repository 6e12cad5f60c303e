"""The researcher's own strategies, metrics and data loaders, found the ways a built-in is.

Loose modules in the folder a job runs from, import paths, and entry points; contract
breaches as one line; a plugin's edit as a new fingerprint. The installed-package way
(wheels in a fresh environment) is tests/test_plugin_install.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import ConfigError
from runner.api.value import Value, check_values
from runner.config.fingerprint import fingerprint, prompt_files
from runner.config.run_config import build_run_config
from runner.plugins import sources
from runner.plugins import values as value_facts
from runner.plugins.errors import PluginError
from runner.plugins.registry import available, find, load
from tests.runner.config.test_config import composed

REPO = Path(__file__).resolve().parents[3]

FIRST_WORDS = '''
"""A study's own strategy: the first ``n`` words of the document (no model)."""
from runner.api import Chunk, StrategyResult

ROLES = ()
IGNORES = {}
PROMPT_DIRS = ()


def summarize(chunks: list[Chunk], *, n: int = 5) -> StrategyResult:
    text = "".join(c.text for c in chunks)
    return StrategyResult(" ".join(text.split()[:n]), [], {})
'''

SHOUT_COUNT = '''
"""A study's own metric: the words of the summary in capitals."""
from runner.api import Metric, MetricResult

ROLES = ()
PROMPT_DIRS = ()


class Shouts(Metric):
    headline = ("capitals",)

    def score(self, document, summary):
        return MetricResult({"capitals": float(sum(w.isupper() for w in summary.split()))})


def setup():
    return Shouts()
'''

TWO_BOOKS = '''
"""A study's own data loader: two fixed documents, or the files under ``path``."""
from pathlib import Path

from runner.api import Document

KEYS = ("path",)


def load(*, path=None):
    if path:
        return [Document(p.stem, p.read_text()) for p in sorted(Path(path).glob("*.md"))]
    return [Document("a", "ONE two THREE four five six."), Document("b", "Seven EIGHT nine.")]
'''


def _write(folder: Path, name: str, source: str) -> Path:
    file = folder / f"{name}.py"
    file.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return file


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A study folder as the current folder, with a strategy, a metric and a data loader."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "first_words", FIRST_WORDS)
    _write(tmp_path, "shout_count", SHOUT_COUNT)
    _write(tmp_path, "two_books", TWO_BOOKS)
    load.cache_clear()
    for name in ("first_words", "shout_count", "two_books"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def _config(*overrides: str) -> Any:
    raw = composed(*overrides)
    return build_run_config(raw, overrides)


def test_a_loose_module_in_the_current_folder_is_a_strategy(study: Path) -> None:
    config = _config("strategy=none", "strategy.name=first_words", "data=sample", "metrics=none")
    assert config.plugins["strategy"].file == (study / "first_words.py").resolve()
    assert config.plugins["strategy"].origin == f"module file {study / 'first_words.py'}"
    result = config.strategy_module.summarize([], n=3)
    assert result.summary == ""


def test_a_metric_block_names_its_plugin_and_keeps_its_label(study: Path) -> None:
    config = _config("metrics=none", "+metrics.caps.name=shout_count")
    assert list(config.metrics) == ["caps"] and config.metrics["caps"] == {}
    metric = config.metric_module("caps").setup()
    assert metric.score(None, "ONE two THREE").values == {"capitals": 2.0}


def test_an_import_path_finds_a_package_that_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "lab_code"
    package.mkdir()
    (package / "__init__.py").write_text("")
    _write(package, "first", FIRST_WORDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = find("strategy", "lab_code.first")
    assert (plugin.distribution, plugin.origin) == (None, "module lab_code.first")
    assert load(plugin).ROLES == ()


def test_a_loose_module_named_like_a_built_in_is_a_clash_naming_both(study: Path) -> None:
    _write(study, "hier", FIRST_WORDS)
    with pytest.raises(PluginError) as caught:
        find("strategy", "hier")
    message = str(caught.value)
    assert "strategies.hier (built-in)" in message and str(study / "hier.py") in message


def test_two_packages_registering_one_name_is_an_error_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = [
        sources.EntryPoint("lead_k", "lab_a.lead_k", "lab-a", "1.0"),
        sources.EntryPoint("lead_k", "lab_b.lead", "lab-b", "2.1"),
    ]
    monkeypatch.setattr("runner.plugins.registry.entry_points", lambda group: fake)
    available.cache_clear()
    try:
        with pytest.raises(PluginError, match=r"lab_a.lead_k \(package lab-a 1.0\).*lab_b.lead"):
            available("strategy")
    finally:
        available.cache_clear()


BROKEN = {
    "import_fails": ("import not_a_module_anywhere\n", "ModuleNotFoundError"),
    "no_summarize": ("ROLES = ()\nIGNORES = {}\nPROMPT_DIRS = ()\n", "missing summarize"),
    "no_chunks": (
        "ROLES = ()\nIGNORES = {}\nPROMPT_DIRS = ()\ndef summarize(*, n=1):\n    return None\n",
        "must take the chunks first",
    ),
    "unknown_role": (
        "ROLES = ('critic',)\nIGNORES = {}\nPROMPT_DIRS = ()\n"
        "def summarize(chunks, critic):\n    return None\n",
        "'critic', which is not a model role",
    ),
    "values_not_facts": (
        "ROLES = ()\nIGNORES = {}\nPROMPT_DIRS = ()\nVALUES = {'ratio': (0, 1)}\n"
        "def summarize(chunks):\n    return None\n",
        "VALUES['ratio'] must be a runner.api.Value, e.g. Value(title='Compression'); got (0, 1)",
    ),
}


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"r": Value(range=(1, 0))}, "VALUES['r']: range must be (low, high) with low < high"),
        ({"r": Value(range=(0, math.inf))}, "range must be (low, high) with low < high"),
        ({"r": Value(better="up")}, "better must be 'higher', 'lower' or None; got 'up'"),  # type: ignore[arg-type]
        ({"r": Value(kind="share")}, "kind must be one of number, count, ordinal, label"),  # type: ignore[arg-type]
        ((Value(),), "VALUES must be a dict of value name -> runner.api.Value"),
        ({"": Value()}, "VALUES must be a dict of value name -> runner.api.Value"),
    ],
)
def test_declared_values_that_are_not_facts_are_named(values: object, problem: str) -> None:
    assert problem in (check_values(values) or "")


def test_declared_values_round_trip_as_a_run_records_them() -> None:
    """What a job writes in the tag is what every reader gets back, defaults left out."""
    declared = {
        "score": Value("BooookScore", (0, 100), "higher"),
        "n": Value(kind="count"),
        "curve": Value("evaluator score", (1, 5), "higher", "ordinal", series=True),
    }
    tags = value_facts.tags({"bs": declared}, {"curve": declared["curve"]})
    assert json.loads(tags["metric.bs.values"])["n"] == {"kind": "count"}
    read = value_facts.recorded(tags, {})
    assert read == {
        **{f"bs/{k}": v for k, v in declared.items()},
        "strategy/curve": declared["curve"],
    }
    assert value_facts.recorded({"metric.bs.values": '{"x": {"range": [2, 1]}}'}, {}) == {}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_plugin_is_one_line_and_exit_2_with_no_run(tmp_path: Path, name: str) -> None:
    """One case as a shell sees it (a child process); the others in a fork of this worker,
    which runs the same command's code without a new interpreter's imports."""
    from tests.helpers.in_process import run_in_process

    source, problem = BROKEN[name]
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    args = [f"strategy.name={name}", "metrics=none"]
    if name == "import_fails":
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-m", "runner", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    else:
        done = run_in_process(*args, cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"error: strategy={name} (module file {tmp_path / name}.py)")
    assert problem in lines[0]
    assert not (tmp_path / "mlruns").exists()


def test_editing_a_loose_plugin_changes_the_fingerprint(study: Path) -> None:
    overrides = ("strategy=none", "strategy.name=first_words", "data=sample", "metrics=none")
    config = _config(*overrides)
    before = fingerprint(config, prompt_files(config))
    assert fingerprint(_config(*overrides), prompt_files(config)) == before  # stable
    file = study / "first_words.py"
    file.write_text(file.read_text().replace("n: int = 5", "n: int = 6"), encoding="utf-8")
    load.cache_clear()
    sys.modules.pop("first_words", None)
    after = _config(*overrides)
    assert fingerprint(after, prompt_files(after)) != before


def test_a_data_loader_plugin_reads_only_its_keys(study: Path) -> None:
    config = _config("data=sample", "data.source=two_books")
    assert config.data.values() == {"path": None}
    with pytest.raises(ConfigError, match=r"data.references is not read by data=two_books"):
        _config("data=dir", "data.source=two_books", "data.references=somewhere")


def test_a_job_of_plugins_only_runs_and_names_them_in_its_tags(study: Path) -> None:
    """Strategy, metric and documents all from the study folder; no model is needed."""
    store = study / "store"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "strategy=none",
            "strategy.name=first_words",
            "+strategy.n=3",
            "data=sample",
            "data.source=two_books",
            "metrics=none",
            "+metrics.caps.name=shout_count",
            f"tracking.uri=sqlite:///{store}/mlflow.db",
            "cache.enabled=false",
        ],
        cwd=study,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    (run,) = client.search_runs([client.get_experiment_by_name("summarization").experiment_id])
    assert run.info.status == "FINISHED"
    # first 3 words: "ONE two THREE" has 2 capitals, "Seven EIGHT nine." has 1: mean 1.5
    assert run.data.metrics["caps/capitals"] == pytest.approx(1.5)
    tags = run.data.tags
    assert tags["plugin.strategy"].startswith(f"first_words (module file {study}/first_words.py)")
    assert tags["plugin.metrics.caps"].startswith("shout_count (module file")
    assert tags["plugin.data"].startswith("two_books (module file")


def test_help_lists_the_built_ins_with_their_origin() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "runner", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    listed = dict(
        line.split(": ", 1)
        for line in done.stdout.split("== Strategies, metrics and data loaders ==")[1].splitlines()
        if line.startswith(("strategy: ", "metrics: ", "data: "))
    )
    assert listed["strategy"] == "baseline, hier, incremental, none, summit (built-in)"
    assert "booookscore" in listed["metrics"] and listed["metrics"].endswith("(built-in)")
    assert listed["data"] == (
        "booookscore_pickle, dir, fables, hf, none, sample, storysumm, summaries (built-in)"
    )
    assert "precomputed" not in done.stdout.split("== Config ==")[0]


def test_a_job_imports_only_the_strategy_and_metrics_it_names() -> None:
    """strategy=hier metrics=stats: no other strategy or metric module is imported."""
    code = textwrap.dedent(
        """
        import sys
        from hydra import compose, initialize_config_dir
        from omegaconf import OmegaConf
        from runner.config.run_config import build_run_config
        with initialize_config_dir(config_dir="CONF", version_base="1.3"):
            cfg = compose("config", overrides=["strategy=hier", "metrics=stats"])
        build_run_config(OmegaConf.to_container(cfg, resolve=True))
        print(" ".join(sorted(m for m in sys.modules if m.startswith(("strategies.", "metrics.")))))
        """
    ).replace("CONF", str(REPO / "conf"))
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = set(done.stdout.split())
    assert "strategies.hier" in loaded and "metrics.stats" in loaded
    others = {"strategies.summit", "strategies.incremental", "metrics.booookscore", "metrics.geval"}
    assert loaded.isdisjoint(others), loaded & others
