"""Which package may import which (docs/ARCHITECTURE.md), checked from the source with ``ast``.

The rules are about packages (``runner.llm``, ``runner.run``, ``strategies``...), never single
modules, so code may move between the modules of a package without touching them. Every
import counts: module level, inside a function, under ``TYPE_CHECKING``, relative ones too.
An import the rules forbid but the code has today is listed in ``EXCEPTIONS`` with its reason;
a test fails when an exception is no longer needed, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("runner", "strategies", "metrics", "hydra_plugins")
"""Top-level packages read from the source (``hydra_plugins``: the resuming sweeper)."""

PLUGIN_API = ("runner.api",)
"""The plugin API, one package (``runner/api/``): its modules import nothing else of
``runner``; plugins import ``runner.api`` itself."""
ENTRY_POINTS = ("runner.__main__",)
"""``python -m runner``: the one job entry point."""


def _module_files() -> dict[str, Path]:
    """Dotted module name -> file, as ``tests/test_structure.py`` finds them."""
    out = {}
    for package in SCANNED:
        for file in sorted((REPO / package).rglob("*.py")):
            parts = file.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return out


MODULES = _module_files()


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module of ``from ... import``; ``from .x import y`` resolved."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_in(source: str, name: str, is_package: bool = False) -> set[str]:
    """Every module imported anywhere in ``source``, the code of module ``name`` (the approach
    of test_structure's ``imports_of``: ``from a import b`` is ``a.b`` when that is a module).
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, name, is_package)
            submodules = {f"{module}.{a.name}" for a in node.names} & set(MODULES)
            found.update(submodules or {module})
    return found


def imports_of(name: str) -> set[str]:
    """Every module the project module ``name`` imports."""
    file = MODULES[name]
    return imports_in(file.read_text(encoding="utf-8"), name, file.name == "__init__.py")


def package_of(module: str) -> str:
    """The unit the rules speak of: ``runner.<x>`` for anything in runner (a subpackage such
    as ``runner.llm`` for ``runner.llm.local.model``, or a top-level module such as
    ``runner.api.types``), the top-level name for anything else (``metrics``, ``litellm``).
    """
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "runner" else parts[0]


def package_graph(graph: Mapping[str, Iterable[str]]) -> dict[tuple[str, str], set[str]]:
    """(importing package, imported package) -> the modules behind that edge, as
    ``'runner.view.page -> runner.run.usage'``; a package importing itself is left out.
    """
    edges: dict[tuple[str, str], set[str]] = {}
    for importer, imported in graph.items():
        for target in imported:
            edge = (package_of(importer), package_of(target))
            if edge[0] != edge[1]:
                edges.setdefault(edge, set()).add(f"{importer} -> {target}")
    return edges


@dataclass(frozen=True)
class Packages:
    """Packages matched by name (a name covers its subpackages); ``"*"`` matches any."""

    names: tuple[str, ...]
    but: tuple[str, ...] = ()

    def __contains__(self, package: str) -> bool:
        def within(name: str) -> bool:
            return name == "*" or package == name or package.startswith(name + ".")

        return any(map(within, self.names)) and not any(map(within, self.but))


@dataclass(frozen=True)
class Rule:
    """No package in ``importers`` imports a package in ``imports``."""

    why: str
    importers: Packages
    imports: Packages


RUNNER_BEYOND_THE_API = Packages(("runner",), but=PLUGIN_API)
RULES = (
    Rule(
        "strategies and metrics import from runner only runner.api, as a researcher's plugin "
        "does: the built-ins show the way and prove the API is enough",
        Packages(("strategies", "metrics")),
        Packages(("runner",), but=("runner.api",)),
    ),
    Rule(
        "the plugin API stands alone: a plugin importing it pulls in nothing else of runner",
        Packages(PLUGIN_API),
        RUNNER_BEYOND_THE_API,
    ),
    Rule(
        "only the entry point runs a job and only the resuming sweeper (hydra_plugins/) checks "
        "a sweep's cells: they alone import runner.run",
        Packages(("*",), but=("runner.run", *ENTRY_POINTS, "hydra_plugins")),
        Packages(("runner.run",)),
    ),
    Rule(
        "the registry finds plugins by name and imports them only when asked (importlib): it "
        "imports no strategy or metric, and nothing of runner beyond the plugin API",
        Packages(("runner.plugins",)),
        Packages(("strategies", "metrics", "runner"), but=(*PLUGIN_API, "runner.plugins")),
    ),
    Rule(
        "runner.llm is the one door to litellm",
        Packages(("*",), but=("runner.llm",)),
        Packages(("litellm",)),
    ),
    Rule(
        "runner.tracking is the one door to MLflow",
        Packages(("*",), but=("runner.tracking",)),
        Packages(("mlflow",)),
    ),
    Rule(
        "config, tracking, models and data sit below the job, the sweep and what reads runs back",
        Packages(("runner.config", "runner.tracking", "runner.llm", "runner.data")),
        Packages(
            (
                "runner.run",
                "runner.report",
                "runner.view",
                "runner.sweep",
                "runner.human",
                "runner.annotate",
                "runner.estimate",
            )
        ),
    ),
    Rule(
        "human judgments are data: runner.human reads files and the store, and runs no job, "
        "calls no model, and draws no report",
        Packages(("runner.human",)),
        Packages(
            ("runner.run", "runner.sweep", "runner.report", "runner.view", "runner.llm")
            + ("runner.annotate", "runner.estimate", "strategies", "litellm")
        ),
    ),
    Rule(
        "python -m runner.annotate moves summaries out and judgments in: no job, no model call",
        Packages(("runner.annotate",)),
        Packages(("runner.run", "runner.sweep", "runner.llm", "strategies", "litellm")),
    ),
    Rule(
        "an estimate predicts from the config, the documents and the store: it runs no job and "
        "imports no strategy (each counts its own calls in its estimate hook, loaded by name)",
        Packages(("runner.estimate",)),
        Packages(("runner.run", "runner.sweep", "runner.report", "runner.view", "strategies")),
    ),
    Rule(
        "how far to trust a judge is statistics over values a job already has: no job, no "
        "model call, no store",
        Packages(("runner.reliability",)),
        RUNNER_BEYOND_THE_API,
    ),
    Rule(
        "a sweep runs jobs and ends its parent run: it does not draw reports or pages",
        Packages(("runner.sweep",)),
        Packages(("runner.report", "runner.view")),
    ),
    Rule(
        "reports and the viewer read stored runs: no strategy, model call or job",
        Packages(("runner.report", "runner.view")),
        Packages(("strategies", "litellm", "runner.run")),
    ),
)

EXCEPTIONS: dict[tuple[str, str], str] = {}
"""(importing package, imported package) the rules forbid but the code does today, each with
its reason and the way out. Only remove entries; never add one to let new code pass."""


def violations(
    graph: Mapping[str, Iterable[str]],
    rules: Iterable[Rule] = RULES,
    exceptions: Mapping[tuple[str, str], str] = EXCEPTIONS,
) -> list[str]:
    """One line per package edge of ``graph`` (module -> modules it imports) a rule forbids."""
    found = []
    for (importer, imported), behind in sorted(package_graph(graph).items()):
        if (importer, imported) in exceptions:
            continue
        for rule in rules:
            if importer in rule.importers and imported in rule.imports:
                found.append(f"{importer} -> {imported} ({', '.join(sorted(behind))}): {rule.why}")
    return found


def source_graph() -> dict[str, set[str]]:
    """Module -> every module it imports, for the code in the tree now."""
    return {name: imports_of(name) for name in MODULES}


def test_the_import_directions_hold() -> None:
    assert violations(source_graph()) == []


def test_every_exception_is_still_needed() -> None:
    edges = package_graph(source_graph())
    stale = [edge for edge in EXCEPTIONS if edge not in edges]
    assert stale == [], f"no longer imported: remove {stale} from EXCEPTIONS"
    unneeded = [edge for edge in EXCEPTIONS if not violations({edge[0]: {edge[1]}}, exceptions={})]
    assert unneeded == [], f"no rule forbids {unneeded}: remove them from EXCEPTIONS"


def test_the_scan_sees_every_package_and_the_doors() -> None:
    packages = {package_of(m) for m in MODULES}
    assert {"runner.llm", "runner.run", "runner.sweep", "strategies", "metrics"} <= packages
    assert set(PLUGIN_API) <= packages
    imported = {package_of(i) for m in MODULES for i in imports_of(m)}
    assert {"litellm", "mlflow", "runner.run"} <= imported  # the rules are not vacuous


def test_lazy_type_checking_and_relative_imports_count() -> None:
    code = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import mlflow.entities\n"
        "def f():\n    from ..run import lifecycle\n"
        "from . import data, elsewhere\n"
    )
    assert imports_in(code, "runner.view.page") == {
        "typing",
        "mlflow.entities",
        "runner.run.lifecycle",
        "runner.view.data",
    }
    assert imports_in("from . import page", "runner.view", is_package=True) == {"runner.view.page"}
    assert imports_in("from .local import model", "runner.llm.gateway") == {
        "runner.llm.local.model"
    }


def test_the_checker_catches_each_kind_of_violation() -> None:
    bad = {
        "strategies.hier": {"runner.llm.gateway", "runner.api.types"},
        "metrics.geval": {"litellm"},
        "runner.api.types": {"runner.config.run_config"},
        "runner.tracking.writer": {"runner.report.format", "mlflow"},
        "runner.llm.gateway": {"runner.sweep.callback", "litellm"},
        "runner.sweep.callback": {"runner.run.preflight", "runner.view.page"},
        "runner.data.loaders": {"runner.run.prepare"},
        "runner.report.plots": {"strategies", "runner.run.usage"},
        "runner.view.page": {"mlflow.entities"},
    }
    found = violations(bad, exceptions={})
    assert [line.split(" (")[0] for line in found] == [
        "metrics -> litellm",
        "runner.api -> runner.config",
        "runner.data -> runner.run",
        "runner.data -> runner.run",
        "runner.llm -> runner.sweep",
        "runner.report -> runner.run",
        "runner.report -> runner.run",
        "runner.report -> strategies",
        "runner.sweep -> runner.run",
        "runner.sweep -> runner.view",
        "runner.tracking -> runner.report",
        "runner.view -> mlflow",
        "strategies -> runner.llm",
    ]
    assert "runner.report.plots -> runner.run.usage" in found[5]


def test_the_checker_passes_allowed_imports_and_named_exceptions() -> None:
    fine = {
        "runner.__main__": {"runner.run.lifecycle", "hydra"},
        "hydra_plugins.runner_sweeper": {"runner.run.preflight", "runner.sweep.parent"},
        "runner.sweep.parent": {"runner.tracking.writer", "runner.config.run_config"},
        "runner.run.lifecycle": {"runner.llm.gateway", "runner.tracking.writer", "runner.view"},
        "runner.llm.providers": {"litellm", "runner.api.types"},
        "runner.tracking.writer": {"mlflow.tracking", "runner.api.types"},
        "strategies.hier": {"runner.api", "runner.api.budgets"},
        "metrics.stats": {"runner.api", "numpy"},
        "runner.report.make": {"runner.tracking.reader", "metrics.booookscore"},
    }
    assert violations(fine, exceptions={}) == []
    graph = {"runner.view.page": {"runner.run.usage"}}
    assert len(violations(graph, exceptions={})) == 2  # the job's package and report/view's rule
    assert violations(graph, exceptions={("runner.view", "runner.run"): "why"}) == []


FACADES = ("runner.llm.batch",)
"""Packages the rest of the project reaches through their ``__init__`` alone."""


def reaches_inside(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """``importer -> module`` for each import of a facade's module from outside the facade."""
    return [
        f"{importer} -> {target}"
        for importer, targets in graph.items()
        for target in targets
        for facade in FACADES
        if target.startswith(facade + ".") and not importer.startswith(facade)
    ]


def test_a_facade_package_is_reached_through_its_init() -> None:
    """``runner.llm.batch``: its modules are its own business (7 outside importers once
    reached into 5 of them)."""
    assert reaches_inside(source_graph()) == []
    made_up = {
        "runner.estimate.cell": {"runner.llm.batch.providers"},
        "runner.llm.batch.collector": {"runner.llm.batch.ledger"},
        "runner.run.prepare": {"runner.llm.batch"},
    }
    assert reaches_inside(made_up) == ["runner.estimate.cell -> runner.llm.batch.providers"]


PUBLIC_API_MODULES = (
    "runner.api.asking",
    "runner.api.budgets",
    "runner.api.claims",
    "runner.api.generation",
    "runner.api.human_task",
    "runner.api.judging",
    "runner.api.meta",
    "runner.api.params",
    "runner.api.questions",
    "runner.api.retrieval",
    "runner.api.slots",
)
"""The toolkit modules of the plugin API, imported as modules (their names would crowd
``runner.api``'s): versioned with it, each with its section on the Plugin API page."""


def api_reaches(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """``importer -> module`` for a strategy or metric importing a module of ``runner.api``
    other than its public toolkit: a plugin imports ``runner.api`` itself, whose names are
    the promise."""
    return [
        f"{importer} -> {target}"
        for importer, targets in graph.items()
        if importer.split(".")[0] in ("strategies", "metrics")
        for target in targets
        if target.startswith("runner.api.") and target not in PUBLIC_API_MODULES
    ]


def test_the_built_ins_import_the_plugin_api_itself() -> None:
    assert api_reaches(source_graph()) == []
    made_up = {
        "strategies.hier": {"runner.api.types", "runner.api"},
        "metrics.geval": {"runner.api.slots", "runner.api.judging"},
        "runner.run.x": {"runner.api.types"},
    }
    assert api_reaches(made_up) == ["strategies.hier -> runner.api.types"]


SHARED_TOOLKIT = (
    "strategies.estimating",
    "strategies.postprocess",
    "strategies.prompting",
)
"""The built-in strategies' shared helpers not in ``runner.api`` (as its toolkit modules
are): they read the built-ins' own prompt folders. Not plugins, so any built-in may import
them."""


def plugin_of(module: str) -> str | None:
    """The built-in plugin a module belongs to (``strategies.hier`` for
    ``strategies.hier.view``); None for the shared toolkit and everything else."""
    parts = module.split(".")
    if parts[0] not in ("strategies", "metrics") or len(parts) < 2:
        return None
    root = ".".join(parts[:2])
    return None if root in SHARED_TOOLKIT else root


def cross_imports(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """``importer -> module`` for a built-in plugin importing another: each is as a
    researcher's package, which can reach the others only through the registry."""
    return [
        f"{importer} -> {target}"
        for importer, targets in graph.items()
        for target in targets
        if plugin_of(importer) and plugin_of(target) and plugin_of(importer) != plugin_of(target)
    ]


def test_no_built_in_plugin_imports_another() -> None:
    assert cross_imports(source_graph()) == []
    made_up = {
        "strategies.summit.view": {"strategies.hier.view", "strategies.summit.loop"},
        "metrics.faithfulness.claims": {"runner.api.claims", "metrics"},
        "metrics.f1": {"metrics.alignment"},
    }
    assert cross_imports(made_up) == [
        "strategies.summit.view -> strategies.hier.view",
        "metrics.f1 -> metrics.alignment",
    ]
