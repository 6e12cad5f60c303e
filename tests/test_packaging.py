"""The wheel: what it ships, and the installed command run from a folder outside the repo.

The wheel is built once from a copy of the source tree (a stale ``build/`` in the clone
cannot leak files into it) and installed into a fresh virtual environment that reuses the
pinned dependencies of this one (``--system-site-packages``) but has its own copy of the
project, which must be the one imported. The user's folder is a git repository of its own,
with the environment inside it, as a project's ``.venv`` often is: the run must still
record no commit, since the installed package is not a checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from runner.config.fingerprint import fingerprint, prompt_files
from runner.config.run_config import build_run_config
from tests.helpers.artifacts import artifact_bytes
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.config.test_config import composed

pytestmark = pytest.mark.packaging

REPO = Path(__file__).resolve().parent.parent
SHIPPED = (
    "conf/__init__.py",
    "conf/**/*.yaml",
    "runner/**/*.py",
    "runner/sample_data/*",
    "strategies/**/*.py",
    "strategies/prompts/**/*.txt",
    "metrics/**/*.py",
    "metrics/prompts/**/*.txt",
)
"""Every file the code can load, found in the source tree (``conf/`` ships as runner/conf/)."""
NOT_COPIED = (
    ".git",
    "build",
    "dist",
    "mlruns",
    "outputs",
    "multirun",
    ".cache",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
)
JOB = ("model=openai_compatible", "metrics=stats", "data.limit=1", "progress=false")


def run(cmd: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a command; fail with its output when it fails."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    done = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (
        f"{cmd} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def only_run(store: Path) -> tuple[MlflowClient, Run]:
    """The one run in the sqlite store ``store``."""
    client = MlflowClient(f"sqlite:///{store}")
    experiment = client.get_experiment_by_name("summarization")
    assert experiment is not None, f"no experiment in {store}"
    (logged,) = client.search_runs([experiment.experiment_id])
    return client, logged


def source_files() -> set[str]:
    """Wheel paths of the files SHIPPED names, globbed from the source tree."""
    found = {
        p.relative_to(REPO).as_posix()
        for pattern in SHIPPED
        for p in REPO.glob(pattern)
        if p.is_file() and "__pycache__" not in p.parts
    }
    return {"runner/" + f if f.startswith("conf/") else f for f in found}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(REPO, tmp / "src", ignore=shutil.ignore_patterns(*NOT_COPIED))
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            tmp / "dist",
            tmp / "src",
        ],
        cwd=tmp,
    )
    (built,) = (tmp / "dist").glob("summarization_runner-*-py3-none-any.whl")
    return built


@dataclass(frozen=True)
class Installed:
    """A virtual environment with the wheel installed, and the user's folder around it."""

    home: Path
    """The user's folder (outside the repo; a git repository with one commit)."""
    python: Path
    """The environment's interpreter."""
    command: Path
    """The console script ``summarization-runner``."""
    site_packages: Path
    """Where the wheel went."""


def reuse_packages_of_this_environment(purelib: Path) -> None:
    """Make the pinned packages of the interpreter running the tests visible in the new venv.

    ``--system-site-packages`` reaches the *base* interpreter's packages: when the tests run
    in a virtual environment, as the README's install suggests, those lack hydra and the rest.
    A ``.pth`` line adds this environment's site-packages after the venv's own, so the wheel
    installed there is still the copy imported; the ``.pth`` files inside it (the clone's
    editable install) are not processed, as Python reads only a site directory's own.
    """
    import site

    ours = [p for p in site.getsitepackages() if Path(p) != purelib]
    (purelib / "_tested_environment.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    home = tmp_path_factory.mktemp("user")
    run(["git", "init", "-q"], cwd=home)
    run(
        [
            "git",
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@example.org",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "the user's own project",
        ],
        cwd=home,
    )
    venv = home / ".venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], cwd=home)
    python = venv / "bin" / "python"
    site = run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=home
    )
    reuse_packages_of_this_environment(Path(site.stdout.strip()))
    # The base environment's pip (visible through the system site-packages) installs into
    # the venv; --ignore-installed leaves the editable install of the clone alone.
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--ignore-installed",
            wheel,
        ],
        cwd=home,
    )
    return Installed(home, python, venv / "bin" / "summarization-runner", Path(site.stdout.strip()))


def test_wheel_ships_every_config_prompt_and_sample(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = source_files()
    assert len([f for f in expected if f.endswith(".yaml")]) >= 25
    assert len([f for f in expected if f.endswith(".txt") and "/prompts/" in f]) >= 10
    assert sorted(expected - names) == []
    top_level = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    # no tests/, benchmarks/, conf/; hydra_plugins/ holds the resuming sweeper, found by Hydra
    assert top_level == {"runner", "strategies", "metrics", "hydra_plugins"}
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "summarization-runner = runner.__main__:cli" in scripts


def test_installed_command_composes_the_shipped_config_from_any_folder(
    installed: Installed,
) -> None:
    script = (
        "import runner, runner.conf, strategies, metrics\n"
        "for m in (runner, runner.conf, strategies, metrics): print(m.__file__)"
    )
    probe = run([installed.python, "-c", script], cwd=installed.home)
    for file in probe.stdout.split():
        assert Path(file).is_relative_to(installed.site_packages), file  # not the clone's copy
    by_script = run([installed.command, "--cfg", "job"], cwd=installed.home).stdout
    by_module = run([installed.python, "-m", "runner", "--cfg", "job"], cwd=installed.home).stdout
    assert by_script == by_module and "name: baseline" in by_script and "judge:" in by_script
    helped = run([installed.command, "--help"], cwd=installed.home).stdout
    assert helped.startswith("summarization-runner") and "model: claude" in helped


def test_installed_job_logs_into_the_current_folder(
    installed: Installed, server: FakeOpenAIServer
) -> None:
    items = (*JOB, f"model.api_base={server.url}")
    out = run([installed.python, "-m", "runner", *items], cwd=installed.home).stdout
    store = installed.home / "mlruns" / "mlflow.db"
    assert store.is_file() and f"sqlite:///{store}" in out
    assert (installed.home / ".cache" / "llm").is_dir()
    assert not (installed.site_packages / "mlruns").exists()
    assert not (installed.site_packages / ".cache").exists()
    client, logged = only_run(store)
    assert logged.info.status == "FINISHED" and logged.data.metrics["documents"] == 1
    assert Path(logged.info.artifact_uri.removeprefix("file://")).is_relative_to(
        installed.home / "mlruns"
    )
    tags = logged.data.tags
    assert tags["version.summarization-runner"] == "0.1.0"
    assert "mlflow.source.git.commit" not in tags  # not a checkout, whatever the folder is
    # The wheel's prompts hash as the clone's do: the same config, the same fingerprint.
    config = build_run_config(composed(*items))
    assert tags["fingerprint"] == fingerprint(config, prompt_files(config))
    prompt = artifact_bytes(client, logged.info.run_id, "strategies/prompts/baseline/summarize.txt")
    assert prompt == (REPO / "strategies/prompts/baseline/summarize.txt").read_bytes()


USER_MODEL = """\
# My own OpenAI-compatible server, built on the shipped alias.
defaults:
  - openai_compatible
  - _self_

name: my_server
model: openai/my-served-model
api_base: {url}
context_window: 16384
"""
USER_JUDGE = """\
defaults:
  - /model/my_server@_here_
  - _self_

temperature: 0.0
"""
USER_EXPERIMENT = """\
# @package _global_
chunk: 1024
data:
  limit: 1
progress: false
"""


def test_user_config_folder_adds_a_model_alias(
    installed: Installed, server: FakeOpenAIServer
) -> None:
    work = installed.home / "elsewhere"
    conf = work / "my_conf"
    for file, text in {
        "model/my_server.yaml": USER_MODEL.format(url=server.url),
        "judge/my_server.yaml": USER_JUDGE,
        "experiment/quick.yaml": USER_EXPERIMENT,
    }.items():
        (conf / file).parent.mkdir(parents=True, exist_ok=True)
        (conf / file).write_text(text, encoding="utf-8")
    helped = run([installed.command, "--config-dir", "my_conf", "--help"], cwd=work).stdout
    (experiments,) = [line for line in helped.splitlines() if line.startswith("experiment:")]
    assert (
        "quick" in experiments and "local_demo" in experiments
    )  # the user's beside the shipped ones
    assert "my_server" in helped and "model: claude" in helped
    judged = run(
        [installed.command, f"hydra.searchpath=[file://{conf}]", "judge=my_server", "--cfg", "job"],
        cwd=work,
    ).stdout
    assert "model: openai/my-served-model" in judged and "temperature: 0.0" in judged

    run(
        [
            installed.command,
            "--config-dir",
            "my_conf",
            "model=my_server",
            "+experiment=quick",
            "metrics=stats",
        ],
        cwd=work,
    )
    assert server.requests and {r["model"] for r in server.requests} == {"my-served-model"}
    _, logged = only_run(work / "mlruns" / "mlflow.db")
    params = logged.data.params
    assert logged.info.status == "FINISHED" and logged.data.metrics["documents"] == 1
    assert params["model"] == "my_server" and params["model.model"] == "openai/my-served-model"
    assert params["chunk"] == "1024" and params["context_window"] == "16384"
