"""The core knows no built-in strategy or metric: it reaches every plugin through the registry.

A researcher's plugin gets what a built-in gets only if the core treats the built-ins as
plugins too: no module of ``runner/`` or ``hydra_plugins/`` imports a concrete strategy or
metric (statically, inside a function, or with ``importlib`` and a literal name), and the
built-ins' names appear as string literals (not docstrings), alone or leading a key or a
line (``booookscore/score``, ``'faithfulness: '``), in no core module (the report's default
columns and figure axes, read from ``conf/report.yaml``, are not code).
"""

from __future__ import annotations

import ast
import re
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORE = ("runner", "hydra_plugins")
PLUGIN_PACKAGES = ("strategies", "metrics")
MOST_MODULES_WITH_NAMES = 0
"""None: the last one, the meta-evaluation's faithfulness tables (``'faithfulness: '`` lines),
is the faithfulness metric's own ``meta_tables`` hook (``metrics/faithfulness/meta.py``)."""
GENERIC = {"none", "coherence", "given"}
"""Built-in names that are also words of the core's own vocabulary: ``none`` (``data=none``,
``metrics=none``), ``coherence``, the kind of a human judgment of spans (stored in every
human run's records and the name of its Label Studio task), which the metric that owns the
format (``HUMAN``) gives its meaning (the ``coherence`` metric is another thing), and
``given``, the kind of the trace step of a summary the data gave (stored in the trace of
every ``strategy=none`` run; the ``given`` metric, a rater's outputs read from a file, is
another thing)."""


def _core_files() -> list[Path]:
    return sorted(f for package in CORE for f in (REPO / package).rglob("*.py"))


def _built_in_names() -> set[str]:
    """The names of the built-in strategies and metrics, from their installed entry points."""
    groups = ("summarization_runner.strategies", "summarization_runner.metrics")
    names = {
        point.name
        for group in groups
        for point in metadata.entry_points(group=group)
        if point.value.split(".")[0] in PLUGIN_PACKAGES
    }
    return names - GENERIC


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand alone as statements (docstrings, attribute docs)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def _plugin_imports(tree: ast.AST) -> list[str]:
    """Every import of a plugin package, including ``importlib.import_module("metrics...")``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in PLUGIN_PACKAGES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in PLUGIN_PACKAGES:
                found.append(node.module)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            value = node.args[0].value
            wanted = name in ("import_module", "__import__") and isinstance(value, str)
            if wanted and str(value).split(".")[0] in PLUGIN_PACKAGES:
                found.append(str(value))
    return found


def _names_used(tree: ast.AST, names: set[str]) -> list[str]:
    """String literals that are a built-in's name or start with it and ``/``, ``.``, ``:``
    or a space (``booookscore/score``, ``'faithfulness: no source'``)."""
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            head = re.split(r"[./:\s]", node.value, maxsplit=1)[0]
            if head in names:
                found.append(node.value)
    return found


def test_the_checks_can_fail() -> None:
    code = ast.parse(
        'from metrics.booookscore import LABELS\nimportlib.import_module("strategies.hier")\n'
        'KEY = "booookscore/score"\n"""booookscore in a docstring is fine."""\n'
        'NOTE = "faithfulness: no source"\nWORD = "faithfulness-like"\n'
    )
    assert _plugin_imports(code) == ["metrics.booookscore", "strategies.hier"]
    assert _names_used(code, {"booookscore", "faithfulness"}) == [
        "booookscore/score",
        "faithfulness: no source",
    ]


def test_no_core_module_imports_a_concrete_plugin() -> None:
    offenders = {
        str(f.relative_to(REPO)): imports
        for f in _core_files()
        if (imports := _plugin_imports(ast.parse(f.read_text(encoding="utf-8"))))
    }
    assert offenders == {}, "the core reaches plugins through runner.plugins.registry only"


def test_built_in_names_appear_in_few_core_modules() -> None:
    names = _built_in_names()
    assert {"booookscore", "hier", "summit", "stats"} <= names
    using = {
        str(f.relative_to(REPO)): used
        for f in _core_files()
        if (used := _names_used(ast.parse(f.read_text(encoding="utf-8")), names))
    }
    assert len(using) <= MOST_MODULES_WITH_NAMES, f"core modules naming built-ins: {using}"
