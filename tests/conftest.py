"""Shared fixtures: a loopback OpenAI-compatible server, isolated stores, shared data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The tests' own ``mlflow server`` starts, as ``python -m runner.ui`` starts its server
# (runner/ui.py JOB_EXECUTION): without MLflow's eight job-runner processes, ~10 s of CPU each.
os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")

from tests.helpers import store_template  # noqa: E402
from tests.helpers.fake_server import FakeOpenAIServer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def ready_made_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each new MLflow store of this test process is a copy of one built for real (a build
    runs MLflow's migrations, about a second): ``tests/helpers/store_template.py``."""
    undo = store_template.install(tmp_path_factory.mktemp("store-template"))
    yield
    undo()


SLOW_MODULES = (
    "tests/runner/sweep/test_sweep_stop.py",
    "tests/runner/sweep/test_ray_cluster.py",
    "tests/test_crashes.py",
    "tests/test_benchmarks_quick.py",
    "tests/runner/sweep/test_sweeps.py",
    "tests/docs/test_doc_blocks.py",
    "tests/metrics/test_booookscore_released.py",
    "tests/runner/llm/test_local_model.py",
    "tests/test_offline.py",
    "tests/runner/llm/batch/test_batch_job.py",
    "tests/runner/annotate/test_label_studio.py",
    "tests/test_plugin_install.py",
    "tests/test_plugin_failures.py",
    "tests/test_first_day.py",
    "tests/test_packaging.py",
    "tests/metrics/test_booookscore_local.py",
    "tests/runner/tracking/test_tracking_server.py",
    "tests/runner/sweep/test_ray_launcher.py",
    "tests/runner/test_ui_first_screen.py",
    "tests/runner/report/test_reproduce_storysumm.py",
)
"""The modules that take longest (``--durations``), slowest first. pytest-xdist hands each
worker whole modules (``--dist loadfile``, pyproject.toml) in collection order, so these
start first and the run does not end on one worker with a long module while the other idles.
A stale entry costs only balance: the order of tests never changes what they check."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow modules first (``SLOW_MODULES``), each module's tests in their own order."""
    rank = {name: i for i, name in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def worker_share(cores: int) -> int:
    """A test process's share of ``cores``: all of them, or one worker's part under xdist."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, cores // max(1, workers))


@pytest.fixture(scope="session", autouse=True)
def local_model_threads() -> Iterator[None]:
    """The embedded model's threads in this process: its share of the cores under xdist, since
    llama.cpp's threads spin and stall each other when another worker holds a core."""
    from runner.llm.local import model

    real = model.default_threads
    model.default_threads = lambda: worker_share(real())
    yield
    model.default_threads = real


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A fresh echo server on 127.0.0.1."""
    with FakeOpenAIServer() as s:
        yield s


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, str]:
    """Overrides that keep MLflow and the response cache inside the test's tmp dir."""
    return {
        "tracking.uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
        "cache.dir": str(tmp_path / "cache"),
    }


def missing_shared(what: str) -> None:
    """Skip on a fresh clone without ../shared; under CI (CI=true), where it is always
    present, its absence is a failure, not a silent skip."""
    missing(f"../shared is absent: {what} check not run", "../shared")


def missing(message: str, expected: str) -> None:
    """Skip a test whose data or optional package is absent; under CI (CI=true), which
    provides ``expected``, fail instead, so a broken CI install never passes as skips."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true expects {expected})")
    pytest.skip(message)


def shared_book() -> Path:
    """The 57k-token book from ../shared/data, or skip when this clone has none."""
    path = SHARED_DATA / "reminiscences-of-pioneer-days-in-st-paul.txt"
    if not path.exists():
        missing_shared("shared-book")
    return path
