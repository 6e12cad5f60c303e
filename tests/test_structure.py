"""The structure docs/ARCHITECTURE.md describes, checked from the source: doors, no cycles,
and module size as a signal (a tripwire, not a rule)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.fresh import run_fresh

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("runner", "strategies", "metrics")


def _module_files() -> dict[str, Path]:
    """Dotted module name -> file, subpackages included (``runner.llm.local.model``)."""
    out = {}
    for package in PACKAGES:
        for file in (REPO / package).rglob("*.py"):
            parts = file.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return out


MODULES = _module_files()


def imports_of(name: str) -> set[str]:
    """Every module ``name`` imports (absolute names), TYPE_CHECKING and lazy imports included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{a.name}" for a in node.names} & set(MODULES)
            found.update(submodules or {node.module})
    return found


def project_graph() -> dict[str, set[str]]:
    return {name: (imports_of(name) & set(MODULES)) - {name} for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle reachable by depth-first search (each reported once per entry point)."""
    found = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                found.append(path[path.index(nxt) :] + [nxt])
            elif len(path) < len(graph):
                visit(nxt, path + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert not cycles({"a": {"b"}, "b": {"c"}, "c": set()})


def test_no_import_cycle_between_project_modules() -> None:
    assert cycles(project_graph()) == []


def _importers(prefix: str) -> set[str]:
    return {
        name
        for name in MODULES
        if any(i == prefix or i.startswith(prefix + ".") for i in imports_of(name))
    }


def test_one_door_per_external_system() -> None:
    assert _importers("litellm") == {
        "runner.llm.providers",
        "runner.llm.local.model",
        "runner.llm.scripted",
    }
    assert _importers("mlflow") <= {
        "runner.tracking.writer",
        "runner.tracking.reader",
        "runner.tracking.assessments",  # MLflow 3's feedback entities: no other way to build one
    }
    assert _importers("hydra") <= {
        "runner.__main__",
        "runner.config.hydra_errors",
        "runner.config.overrides",  # override strings read by Hydra's own grammar
        "runner.sweep.callback",
        "runner.report.make",
    }
    for name in MODULES:
        if name.startswith(("strategies", "metrics")):
            assert not imports_of(name) & {"litellm", "mlflow", "hydra", "omegaconf"}, name


def _imported_after(code: str) -> set[str]:
    """Top-level packages a fresh interpreter has imported after running ``code``."""
    probe = (
        "import sys\n"
        f"{code}\n"
        "print('MODULES', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    stdout = run_fresh(probe)
    (line,) = [x for x in stdout.splitlines() if x.startswith("MODULES ")]
    return set(line.split()[1:])


def test_validating_a_config_imports_neither_litellm_nor_mlflow() -> None:
    loaded = _imported_after(
        "from tests.runner.config.test_config import composed\n"
        "from runner.config.run_config import build_run_config\n"
        "build_run_config(composed('strategy=hier', 'model=claude'))"
    )
    assert "runner" in loaded and not loaded & {"litellm", "mlflow", "nltk"}


@pytest.mark.parametrize("flag", ["--help", "--cfg job"])
def test_help_and_cfg_import_neither_litellm_nor_mlflow(flag: str) -> None:
    loaded = _imported_after(
        "import runpy\n"
        f"sys.argv = ['runner', *{flag.split()!r}]\n"
        "try:\n"
        "    runpy.run_module('runner', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert "hydra" in loaded and not loaded & {"litellm", "mlflow"}


SIZE_TRIPWIRE = 600
"""Lines no product module may exceed: well above the largest modules, so a module trips it
only once it has grown into several concepts."""


def _module_sizes() -> dict[str, int]:
    """Product module (path from the repository root) -> its number of lines."""
    return {
        str(file.relative_to(REPO)): len(file.read_text(encoding="utf-8").splitlines())
        for package in ("runner", "strategies", "metrics", "hydra_plugins")
        for file in (REPO / package).rglob("*.py")
    }


def test_no_product_module_passes_the_size_tripwire() -> None:
    """Size is a signal, not a rule: one concept per module is the rule.

    A fixed small limit made modules split for the count's sake, one concept spread over
    files named after their halves, which is harder to read than one longer module. What a
    limit can still catch is a module that has grown into several concepts, well past the
    size of the largest modules: that is what the tripwire catches, naming the fix. The
    largest modules are printed (``pytest -s -k size``) to review, not to cut.
    """
    sizes = _module_sizes()
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:10]
    print("largest modules:", ", ".join(f"{path} ({n})" for path, n in largest))
    over = {path: n for path, n in sizes.items() if n > SIZE_TRIPWIRE}
    assert over == {}, (
        f"over {SIZE_TRIPWIRE} lines: {over}; split each by concept (the parts it holds that "
        "change for different reasons), not by line count"
    )


def test_the_size_tripwire_sees_the_product_modules() -> None:
    sizes = _module_sizes()
    assert {"runner/api/__init__.py", "strategies/hier/__init__.py", "metrics/alignment.py"} <= set(
        sizes
    )
    assert any(path.startswith("hydra_plugins/") for path in sizes)
