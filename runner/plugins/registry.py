"""Find a strategy, metric or data loader by the name a config gives, and import it.

Three ways in, one result (a ``Plugin``, then its module):

1. an entry point of an installed distribution, in the group of its kind (``GROUPS``); the
   built-ins are entry points of this package, so they take no special path;
2. a dotted import path (``name: my_pkg.lead_k`` in a strategy's YAML), importable from the
   environment or from the folder the user runs from;
3. a loose ``<name>.py`` in the folder the user runs from (``strategy=lead_k`` beside
   ``lead_k.py``), so a study folder needs no packaging.

Listing what is available reads entry-point metadata only; a module is imported when a job
asks for it (``load``), so ``--help``, the report and the viewer import no plugin.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from runner.plugins.contract import check_contract
from runner.plugins.errors import PluginError, first_line, nearest
from runner.plugins.sources import (
    GROUPS,
    THIS_DISTRIBUTION,
    EntryPoint,
    entry_points,
    module_distribution,
)


@dataclass(frozen=True)
class Plugin:
    """Where one strategy, metric or data loader comes from (nothing imported yet)."""

    kind: str
    """'strategy', 'metrics' or 'data' (the config group that names it)."""
    name: str
    """The name the config gives: an entry point's name, an import path or a file's stem."""
    target: str
    """What to import: ``package.module`` (or ``package.module:attribute``)."""
    distribution: str | None = None
    """The installed distribution that ships it (None: a file or folder on the path)."""
    version: str | None = None
    """That distribution's version."""
    file: Path | None = None
    """A loose module's file in the folder the user runs from."""

    @property
    def built_in(self) -> bool:
        """Shipped by this package (its identity is the package's own; see ``identity``)."""
        return self.distribution == THIS_DISTRIBUTION

    @property
    def origin(self) -> str:
        """Where it comes from, in words, for ``--help`` and error messages."""
        if self.built_in:
            return "built-in"
        if self.file is not None:
            return f"module file {self.file}"
        if self.distribution:
            return f"package {self.distribution} {self.version}"
        return f"module {self.target}"


@cache
def available(kind: str) -> dict[str, Plugin]:
    """Name -> plugin of every entry point of ``kind`` (none imported).

    Two distributions registering one name is an error naming both: which one would run
    depends on install order, so a result could come from the wrong code.
    """
    found: dict[str, Plugin] = {}
    for entry in entry_points(GROUPS[kind]):
        plugin = _from_entry_point(kind, entry)
        other = found.get(entry.name)
        if other is not None and other != plugin:
            raise PluginError(
                f"{kind}={entry.name} is registered twice: {other.target} ({other.origin}) and "
                f"{plugin.target} ({plugin.origin}); uninstall one, or rename its entry point"
            )
        found[entry.name] = plugin
    return found


def _from_entry_point(kind: str, entry: EntryPoint) -> Plugin:
    return Plugin(kind, entry.name, entry.value, entry.distribution, entry.version)


def find(kind: str, name: object) -> Plugin:
    """The plugin a config names (see the module docstring for the three ways)."""
    text = str(name)
    entries = available(kind)
    loose = loose_file(text)
    if text in entries:
        if loose is not None:
            known = entries[text]
            raise PluginError(
                f"{kind}={text} names both {known.target} ({known.origin}) and the module file "
                f"{loose}; rename {loose.name}"
            )
        return entries[text]
    if loose is not None:
        return Plugin(kind, text, text, file=loose)
    if "." in text and all(part.isidentifier() for part in text.split(".")):
        distribution, version = module_distribution(text)
        return Plugin(kind, text, text, distribution, version)
    names = sorted(entries)
    here = sorted(f.stem for f in Path.cwd().glob("*.py") if f.stem.isidentifier())
    raise PluginError(
        f"{kind}={text} is unknown; {nearest(text, names + here)}available: {', '.join(names)} "
        f"(or an import path such as my_pkg.{text}, or {text}.py in this folder)"
    )


def loose_file(name: str, folder: Path | None = None) -> Path | None:
    """``<folder>/<name>.py`` when ``name`` could be a module name and that file exists.

    ``folder`` is the current one unless given: where a job finds a loose module, and the
    rule ``--help`` lists them by.
    """
    if not name.isidentifier():
        return None
    file = (folder or Path.cwd()) / f"{name}.py"
    return file.resolve() if file.is_file() else None


@cache
def load(plugin: Plugin) -> ModuleType:
    """The plugin's module, imported and checked against its kind's contract.

    Any failure is one ``PluginError`` line naming the plugin, where it comes from and the
    problem, never a traceback: a broken plugin stops the job before anything runs.
    """
    try:
        module = _import(plugin)
    except Exception as err:  # noqa: BLE001 - any import failure of user code is reported
        raise PluginError(
            f"{plugin.kind}={plugin.name} ({plugin.origin}) cannot be imported: "
            f"{type(err).__name__}: {first_line(err)}"
        ) from err
    problem = check_contract(plugin.kind, module)
    if problem:
        raise PluginError(f"{plugin.kind}={plugin.name} ({plugin.origin}): {problem}")
    return module


def _import(plugin: Plugin) -> ModuleType:
    """Import a loose file under its own name, anything else by its import path.

    The folder the user runs from is put on the path (``python -m`` does so, the
    ``summarization-runner`` script does not), so a plugin there can import its neighbours.
    """
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.append(here)
    if plugin.file is None:
        module_name, _, attribute = plugin.target.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attribute) if attribute else module
    spec = importlib.util.spec_from_file_location(plugin.name, plugin.file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot read {plugin.file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[plugin.name] = module
    spec.loader.exec_module(module)
    return module
