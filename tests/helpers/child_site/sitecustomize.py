"""Test-only start-up of the tests' child processes: new MLflow stores as template copies.

On ``PYTHONPATH`` only in the tests' children (``tests/helpers/store_template.py``
``for_children``). When ``RUNNER_TEST_STORE_TEMPLATE`` names a template, the first import of
``runner.tracking.writer`` is followed by ``install_in_child``; nothing else is imported or
changed, so a child that never opens a store (``--help``, a refused config) is untouched.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

TARGET = "runner.tracking.writer"
HELPER = Path(__file__).resolve().parent.parent / "store_template.py"


class _AfterWriter(MetaPathFinder):
    """Finds ``runner.tracking.writer`` as the other finders do, then wraps its loading."""

    def find_spec(
        self, name: str, path: Any, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        real_exec = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            real_exec(module)
            _install(Path(os.environ[ENV]))

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _install(template: Path) -> None:
    """``store_template.install_in_child``, loaded from its file (``tests`` is not a package
    a child can import)."""
    spec = importlib.util.spec_from_file_location("_runner_test_store_template", HELPER)
    assert spec is not None and spec.loader is not None
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    helper.install_in_child(template)


ENV = "RUNNER_TEST_STORE_TEMPLATE"
if os.environ.get(ENV):
    sys.meta_path.insert(0, _AfterWriter())
