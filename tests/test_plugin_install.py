"""A researcher's own strategy and metric, installed beside the wheel, swept with the built-ins.

The project's wheel and the example plugin's wheel (``examples/plugin/``) go into one fresh
virtual environment (test_packaging's, reused); every command then runs from a study folder
that is neither the repository nor the environment, as a user's would be:

- a joblib sweep ``strategy=lead_k,hier metrics=paper,compression`` against the loopback
  server: one parent, four FINISHED children, and the plugin metric's values equal to the
  ratios computed here from the logged summaries and the shipped source texts (not by the
  plugin's code);
- ``--help`` names the plugin's strategy and metric with the package they come from;
- a loose ``lead_k_loose.py`` in the study folder: a rerun of its sweep skips the finished
  cell, and after a comment is added to the file the rerun is a new fingerprint and a new
  FINISHED run (the source's SHA-256 is part of the fingerprint);
- broken loose modules (an import that fails, no ``summarize``, a ``summarize`` that takes no
  chunks) each stop the job with exit 2 and one line naming the plugin and its file, before
  any MLflow run exists.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.text import count_tokens
from tests import test_packaging as packaging
from tests.helpers.artifacts import artifact
from tests.helpers.fake_server import FakeOpenAIServer
from tests.test_faults import responder

pytestmark = pytest.mark.packaging

PLUGIN_SOURCE = packaging.REPO / "examples" / "plugin"
DISTRIBUTION = "summarization-runner-example-plugin"

# test_packaging's fixtures, shared rather than copied: the project's wheel, and a fresh
# virtual environment with it installed (this environment's pinned packages reached via .pth).
wheel = packaging.wheel
installed = packaging.installed


@dataclass(frozen=True)
class Study:
    """The environment with both wheels installed, and the user's study folder."""

    python: Path
    """The environment's interpreter."""
    folder: Path
    """Where every command runs: outside the repository and the environment."""
    site_packages: Path
    """Where the wheels went (the shipped sample texts are read from there)."""


@pytest.fixture(scope="module")
def plugin_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin's wheel, built from a copy (no egg-info or build/ left in the repo)."""
    tmp = tmp_path_factory.mktemp("plugin-wheel")
    skipped = shutil.ignore_patterns(*packaging.NOT_COPIED)
    shutil.copytree(PLUGIN_SOURCE, tmp / "src", ignore=skipped)
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    packaging.run([*pip, "-w", tmp / "dist", tmp / "src"], cwd=tmp)
    (built,) = (tmp / "dist").glob("summarization_runner_example_plugin-0.1.0-*.whl")
    return built


@pytest.fixture(scope="module")
def study(
    installed: packaging.Installed, plugin_wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Study:
    packaging.run(
        [
            installed.python,
            *("-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--ignore-installed"),
            plugin_wheel,
        ],
        cwd=installed.home,
    )
    return Study(installed.python, tmp_path_factory.mktemp("study"), installed.site_packages)


def attempt(study: Study, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGS`` in the environment, whatever its exit status."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return subprocess.run(
        [str(study.python), "-m", "runner", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def runner(study: Study, *args: str | Path, cwd: Path) -> str:
    """``python -m runner ARGS``, which must succeed; its stdout and stderr."""
    done = attempt(study, *args, cwd=cwd)
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def stores(folder: Path, name: str) -> list[str]:
    """Overrides that keep a job's MLflow store and response cache in ``folder``."""
    return [f"tracking.uri=sqlite:///{folder / name}.db", f"cache.dir={folder / 'cache'}"]


def runs_of(uri: str) -> list[Any]:
    """Every run of the experiment in ``uri`` (parents included), newest first."""
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("summarization")
    return client.search_runs([experiment.experiment_id]) if experiment else []


def expected_compression(document: str, summary: str) -> dict[str, float]:
    """The plugin metric's definition, computed here: words by whitespace, cl100k tokens.

    Tokens are counted with the project's one tokenizer (the plugin's code is not used).
    """
    return {
        "compression/word_ratio": len(summary.split()) / len(document.split()),
        "compression/token_ratio": count_tokens(summary) / count_tokens(document),
    }


def test_a_sweep_runs_the_installed_plugin_beside_the_built_ins(study: Study) -> None:
    uri = f"sqlite:///{study.folder / 'sweep.db'}"
    with FakeOpenAIServer(responder) as server:
        runner(
            study,
            *("-m", "strategy=lead_k,hier", "metrics=paper,compression", "hydra/launcher=joblib"),
            *("model=openai_compatible", f"model.api_base={server.url}", "chunk=512"),
            *("data.limit=1", "progress=false", *stores(study.folder, "sweep")),
            cwd=study.folder,
        )
    found = runs_of(uri)
    (parent,) = [r for r in found if r.data.tags.get("runner.kind") == "sweep"]
    children = [r for r in found if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.status == "FINISHED" and len(found) == 5
    assert {c.info.status for c in children} == {"FINISHED"}
    cells = {(c.data.params["strategy"], c.data.params["metrics"]): c for c in children}
    assert sorted(cells) == [  # a run's metrics param lists its metric blocks (paper: two)
        ("hier", "booookscore,stats"),
        ("hier", "compression"),
        ("lead_k", "booookscore,stats"),
        ("lead_k", "compression"),
    ]
    client = MlflowClient(uri)
    samples = study.site_packages / "runner" / "sample_data"
    for (strategy, metrics), child in cells.items():
        logged = artifact(client, child.info.run_id, "summaries.json")
        ((doc_id, summary),) = json.loads(logged).items()
        document = (samples / f"{doc_id}.txt").read_text(encoding="utf-8")
        values = child.data.metrics
        plugins = {k: v for k, v in child.data.tags.items() if k.startswith("plugin.")}
        expected = {"plugin.strategy"} if strategy == "lead_k" else set()
        expected |= {"plugin.metrics.compression"} if metrics == "compression" else set()
        assert set(plugins) == expected, (strategy, metrics, plugins)  # built-ins: no tag
        assert all(f"(package {DISTRIBUTION} 0.1.0)" in v for v in plugins.values()), plugins
        if metrics == "compression":
            assert "booookscore/score" not in values
            for key, value in expected_compression(document, summary).items():
                assert values[key] == pytest.approx(value, rel=1e-12), (strategy, key)
        else:
            assert "booookscore/score" in values and "compression/word_ratio" not in values
        if strategy == "lead_k":  # the document's opening, word for word
            assert " ".join(document.split()).startswith(" ".join(summary.split()))
            assert (values["calls"] > 0) == (metrics != "compression")  # only a judge calls


def test_the_example_plugin_imports_only_the_plugin_api() -> None:
    imported = set()
    for file in sorted((PLUGIN_SOURCE / "example_plugin").rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
    assert {m for m in imported if m.split(".")[0] == "runner"} == {"runner.api"}


def test_help_lists_the_plugin_with_its_package(study: Study) -> None:
    helped = runner(study, "--help", cwd=study.folder)
    for name in ("lead_k", "compression"):
        assert [line for line in helped.splitlines() if name in line and DISTRIBUTION in line], (
            f"--help does not name {name} with {DISTRIBUTION}:\n{helped[-2000:]}"
        )


LOOSE = """\
\"\"\"lead_k, as a loose module of a study folder (no package, no entry point).\"\"\"

from runner.api import Chunk, StrategyResult, split_sentences

ROLES = ()
IGNORES = {"chunk": "reads the whole document", "temperature": "calls no model"}
PROMPT_DIRS = ()


def summarize(chunks: list[Chunk], *, k: int = 2) -> StrategyResult:
    lead = split_sentences("".join(c.text for c in chunks))[:k]
    return StrategyResult(summary=" ".join(lead))
"""


def test_an_edited_loose_module_is_a_new_experiment(study: Study) -> None:
    folder = study.folder / "loose"
    (folder / "my_conf" / "strategy").mkdir(parents=True)
    (folder / "my_conf" / "strategy" / "lead_k_loose.yaml").write_text("name: lead_k_loose\n")
    module = folder / "lead_k_loose.py"
    module.write_text(LOOSE, encoding="utf-8")
    uri = f"sqlite:///{folder / 'loose.db'}"
    sweep = (
        *("--config-dir", "my_conf", "-m", "strategy=lead_k_loose", "metrics=compression"),
        *("data.limit=1", "progress=false", *stores(folder, "loose")),
    )

    def children() -> list[Any]:
        return [r for r in runs_of(uri) if r.data.tags.get("runner.kind") != "sweep"]

    runner(study, *sweep, cwd=folder)
    (first,) = children()
    assert first.info.status == "FINISHED" and first.data.params["strategy"] == "lead_k_loose"
    assert f"(module file {module})" in first.data.tags["plugin.strategy"]
    again = runner(study, *sweep, cwd=folder)  # unchanged: the sweep has this cell already
    assert "skipped" in again and len(children()) == 1
    module.write_text(LOOSE + "# k=2: two sentences read better than three here\n")
    edited = runner(study, *sweep, cwd=folder)
    assert "skipped" not in edited
    second, older = children()  # newest first
    assert older.info.run_id == first.info.run_id
    assert second.info.status == "FINISHED"
    assert second.data.tags["fingerprint"] != first.data.tags["fingerprint"]
    assert (
        second.data.metrics["compression/word_ratio"]
        == first.data.metrics["compression/word_ratio"]
    )  # the same code ran: only the file's bytes changed


BROKEN = {
    "imports_a_missing_package": (
        "import lab_helpers_not_installed\n\n"
        "ROLES = ()\nIGNORES = {}\nPROMPT_DIRS = ()\n\n\n"
        "def summarize(chunks):\n    return lab_helpers_not_installed.lead(chunks)\n",
        "cannot be imported: ModuleNotFoundError",
    ),
    "has_no_summarize": (
        "ROLES = ()\nIGNORES = {}\nPROMPT_DIRS = ()\n\n\ndef summarise(chunks):\n    return None\n",
        "missing summarize",
    ),
    "takes_no_chunks": (
        "ROLES = ()\nIGNORES = {}\nPROMPT_DIRS = ()\n\n\ndef summarize(*, k=3):\n    return None\n",
        "must take the chunks first",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_loose_plugin_is_one_line_and_exit_2(study: Study, name: str) -> None:
    source, problem = BROKEN[name]
    folder = study.folder / "broken" / name
    (folder / "my_conf" / "strategy").mkdir(parents=True)
    (folder / "my_conf" / "strategy" / f"{name}.yaml").write_text(f"name: {name}\n")
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    done = attempt(
        study,
        *("--config-dir", "my_conf", f"strategy={name}", "metrics=compression", "data.limit=1"),
        *stores(folder, "broken"),
        cwd=folder,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1, done.stderr
    (line,) = lines
    assert f"strategy={name}" in line and str(folder / f"{name}.py") in line and problem in line
    assert "Traceback" not in done.stdout + done.stderr
    store = folder / "broken.db"
    assert not store.exists() or runs_of(f"sqlite:///{store}") == []
