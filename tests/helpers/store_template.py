"""New MLflow stores in a test process as copies of one built for real.

MLflow builds a new sqlite store by running its schema migrations one by one, about a second
on 2 cores, and the suite makes several hundred stores in-process. ``runner.tracking.writer``
creates every one of them in ``_create_store``; in a test process that function is wrapped
(``tests/conftest.py``): the first store is built by the real function, and each later one is
a byte copy of it, renamed into place as the real one renames its own, with the default
experiment's artifact location set to what MLflow would have written for the new store. The
result is the same file a real creation leaves. Child processes (``python -m runner`` in the
CLI, crash and docs tests) are not wrapped: they build their stores for real.
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
    """Wrap ``writer._create_store`` for this process; returns the undo."""
    real = writer._create_store
    writer._create_store = StoreTemplate(folder, real).create

    def undo() -> None:
        writer._create_store = real

    return undo


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
