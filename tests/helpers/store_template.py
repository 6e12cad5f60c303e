"""New MLflow stores in a test process as copies of one built for real.

MLflow builds a new sqlite store by running its schema migrations one by one, about a second
on 2 cores, and the suite makes several hundred stores in-process. ``runner.tracking.writer``
creates every one of them in ``_create_store``; in a test process that function is wrapped
(``tests/conftest.py``): the first store is built by the real function, and each later one is
a byte copy of it, renamed into place as the real one renames its own, with the default
experiment's artifact location set to what MLflow would have written for the new store. The
result is the same file a real creation leaves.

Child processes (``python -m runner`` in the CLI, sweep, docs and benchmark tests) do the
same: ``for_children`` puts ``tests/helpers/child_site`` first on their ``PYTHONPATH`` and the
template's path in ``RUNNER_TEST_STORE_TEMPLATE``; its ``sitecustomize`` wraps the child's
``_create_store`` once ``runner.tracking.writer`` is imported (``install_in_child``), with no
other effect on the child. A test that times or kills a child during MLflow's migrations
(``tests/test_crashes.py``) removes the variable (``without_template``), and a fresh venv
(``tests/test_packaging.py``) gets no ``PYTHONPATH``: those build for real.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from runner.tracking import writer
from runner.tracking.store import store_to_build

CreateStore = Callable[[str, "Path | None"], None]
CHILD_ENV = "RUNNER_TEST_STORE_TEMPLATE"
"""The template's path, for child processes (``child_site/sitecustomize.py``)."""
CHILD_SITE = Path(__file__).resolve().parent / "child_site"


class StoreTemplate:
    """``_create_store`` for a test process: one real build, then copies."""

    def __init__(self, folder: Path, real: CreateStore) -> None:
        self.folder, self.real = folder, real
        self.template = folder / "template.db"
        self._lock = threading.Lock()

    def _built(self) -> Path:
        with self._lock:
            if not self.template.exists():
                self.real(f"sqlite:///{self.template}", self.folder / "artifacts")
            return self.template

    def create(self, uri: str, artifact_root: Path | None) -> None:
        """As ``writer._create_store``: a missing store appears whole, under its final name."""
        path = store_to_build(uri)
        if path is None:
            self.real(uri, artifact_root)  # nothing to build, or not a plain file: as before
            return
        from mlflow.utils.uri import append_to_uri_path, resolve_uri_if_local

        building = path.with_name(path.name + ".creating")
        shutil.copyfile(self._built(), building)
        root = str(artifact_root or path.parent / "artifacts")
        with sqlite3.connect(building) as db:
            db.execute(
                "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                (append_to_uri_path(resolve_uri_if_local(root), "0"),),
            )
        db.close()
        os.replace(building, path)


def install(folder: Path) -> Callable[[], None]:
    """Wrap ``writer._create_store`` for this process and its children; returns the undo.

    The template is built now (one real build per test process), so that a child never
    builds it: children only copy it.
    """
    real = writer._create_store
    template = StoreTemplate(folder, real)
    writer._create_store = template.create
    built = template._built()
    before = {name: os.environ.get(name) for name in (CHILD_ENV, "PYTHONPATH")}
    os.environ.update(for_children(built, os.environ.get("PYTHONPATH")))

    def undo() -> None:
        writer._create_store = real
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    return undo


def for_children(template: Path, pythonpath: str | None) -> dict[str, str]:
    """The environment variables that make a child process copy ``template``."""
    path = os.pathsep.join(filter(None, [str(CHILD_SITE), pythonpath]))
    return {CHILD_ENV: str(template), "PYTHONPATH": path}


def without_template(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a child that must build its stores for real."""
    return {k: v for k, v in env.items() if k != CHILD_ENV}


def install_in_child(template: Path) -> None:
    """In a child process, once ``runner.tracking.writer`` is loaded: copy ``template``."""
    if template.is_file():  # a template removed since (the test process ended): build
        copies = StoreTemplate(template.parent, writer._create_store)
        copies.template = template
        writer._create_store = copies.create


@contextlib.contextmanager
def built_for_real() -> Iterator[None]:
    """New stores built by MLflow's migrations within the block, for a test that times them
    (``tests/test_crashes.py`` kills runs during the migrations)."""
    wrapped = writer._create_store
    template = getattr(wrapped, "__self__", None)
    if isinstance(template, StoreTemplate):
        writer._create_store = template.real
    try:
        yield
    finally:
        writer._create_store = wrapped
