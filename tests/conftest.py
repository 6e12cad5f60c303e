"""Shared fixtures: a loopback OpenAI-compatible server, isolated stores, shared data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

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
