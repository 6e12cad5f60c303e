"""The config reference: every key a user can set, read from what the runner validates with.

The docs' "Config keys" page (``docs/reference/config.md``) is generated from this module on
every ``mkdocs build`` (``docs/hooks/reference.py``), so it cannot drift from the code:

- the top-level keys: ``TOP_LEVEL`` below (types and allowed values, the latter the
  validator's own constants), descriptions from the comments in ``conf/config.yaml``;
- a model role's keys (``model``, ``judge``, ``evaluator``, ``embedder``): the fields of
  ``ModelSpec`` and ``RetryPolicy``, described by their attribute docstrings;
- ``data``: the fields of ``DataConfig`` and the keys a data loader plugin declares;
- a strategy's and a metric's keys: the keyword-only parameters of its ``summarize`` or
  ``setup`` (type and default from the signature, value from the option file), described by
  the comment lines directly above the key in ``conf/<group>/<option>.yaml``;
- the report's keys (``conf/report.yaml``): ``ReportConfig``'s types, the file's comments.

A key without a description is an error (``ReferenceError``), so a new key needs its comment
or docstring before the docs build. Imports no MLflow and no litellm: strategies and metrics
are imported through the registry, as a job imports them.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from runner.api.errors import ConfigError
from runner.api.params import declared
from runner.config.data_config import DataConfig
from runner.config.reference.sources import (
    SKIPPED,
    allowed_values,
    attribute_docs,
    conf_dir,
    flat_keys,
    read_conf,
    type_hints,
    type_name,
    yaml_text,
)
from runner.config.run_config import ON_ERROR_MODES, PROGRESS_MODES
from runner.data.sources import SOURCE_KEYS
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec
from runner.plugins.registry import available, load
from runner.ranges import range_of

ROLE_GROUPS = ("model", "judge", "evaluator", "embedder")
"""The groups whose options are models (each validated as a ``ModelSpec``)."""
PLUGIN_GROUPS = {"strategy": "summarize", "metrics": "setup"}
"""Group -> the function whose keyword-only parameters are its keys."""
PRESET_GROUPS = ("experiment", "model_strategy")
"""Groups of ``# @package _global_`` files: they set other groups' keys and add none."""

TOP_LEVEL: dict[str, tuple[str, str]] = {
    "chunk": ("int > 0", ""),
    "temperature": ("float 0..2 or null", ""),
    "seed": ("int or null", ""),
    "judges": ("list of judge aliases (2+) or null", ""),
    "repeat": ("int >= 0", ""),
    "tracking.uri": ("str or null", ""),
    "tracking.experiment": ("str", ""),
    "cache.dir": ("str or null", ""),
    "cache.enabled": ("bool", ""),
    "budget.usd": ("float > 0 or null", ""),
    "budget.sweep_usd": ("float > 0 or null", ""),
    "force": ("bool", ""),
    "on_error": ("str", ", ".join(ON_ERROR_MODES)),
    "verbose": ("bool", ""),
    "estimate": ("bool", ""),
    "progress": ("str or bool", ", ".join(("auto", *PROGRESS_MODES, "true", "false"))),
}
"""Key of ``conf/config.yaml`` -> (type, allowed values) as ``build_run_config`` checks them."""

REQUIRED = "(required)"
"""The default shown for a field the code gives none: the option file must set it."""

REPORT_FIELDS = {
    "tracking.uri": "uri",
    "tracking.experiment": "experiment",
    "scatter.x": "scatter_x",
    "scatter.y": "scatter_y",
}
"""A ``conf/report.yaml`` key -> its ``ReportConfig`` field, where the names differ."""
REPORT_NAMES = {"metric_keys": "metrics"}


class ReferenceError(ConfigError):
    """The reference cannot be made: a key without a description, or an option that fails."""


@dataclass(frozen=True)
class Key:
    """One config key as the reference shows it."""

    name: str
    """Dotted, as typed on the command line after the group: ``chunk``, ``retry.max_attempts``."""
    type: str
    """What the value must be, in words (``int``, ``str or null``)."""
    default: Any
    """The value the option file (or the code) gives it."""
    allowed: str
    """The values the code accepts, where it restricts them ('' otherwise)."""
    description: str
    """One paragraph: the docstring or the comment above the key, on one line."""


@dataclass(frozen=True)
class Table:
    """The keys of one option file (or of one group, for the model roles)."""

    title: str
    """``strategy=hier``, ``metrics=booookscore``, ``top level``."""
    file: str
    """The file under ``conf/`` the values come from (``strategy/hier.yaml``)."""
    intro: str
    """The file's opening comment: what the option is (its lines kept: commands are indented)."""
    keys: tuple[Key, ...]
    """The keys, in the file's order."""
    sets: tuple[str, ...] = ()
    """For presets and composed option files: what they set or compose."""


def _need(description: str, where: str) -> str:
    if not description:
        raise ReferenceError(
            f"{where} has no description; write a comment line directly above it "
            "(or the attribute docstring of its dataclass field)"
        )
    return description


def top_level(conf: Path) -> Table:
    """``conf/config.yaml``'s keys (the run's knobs)."""
    data, intro, comments = read_conf(conf / "config.yaml")
    keys = []
    for name, value in flat_keys(data):
        kind, allowed = TOP_LEVEL.get(name, ("", ""))
        if not kind:
            raise ReferenceError(
                f"config.yaml: {name} is not in TOP_LEVEL of runner/config/reference/tables.py; "
                "add its type there"
            )
        description = _need(comments.get(name, ""), name)
        keys.append(Key(name, kind, value, allowed, description))
    return Table("top level", "config.yaml", intro, tuple(keys))


def model_keys() -> Table:
    """The keys of every model role: ``ModelSpec``'s fields and ``retry.*``."""
    hints, docs = type_hints(ModelSpec), attribute_docs(ModelSpec)
    keys = []
    for field in fields(ModelSpec):
        if field.name == "retry":
            keys.append(Key("retry", "mapping", None, "", docs["retry"]))
            keys.extend(_retry_keys())
            continue
        default = field.default if field.default is not MISSING else REQUIRED
        where = f"ModelSpec.{field.name}"
        keys.append(
            Key(field.name, type_name(hints[field.name]), default, _limits(field.metadata),
                _need(docs.get(field.name, ""), where))
        )  # fmt: skip
    return Table("model roles", "model/", "", tuple(keys))


def _limits(metadata: Any) -> str:
    """The field's declared range (``runner.ranges``), in words."""
    values = range_of(metadata)
    return "" if values is None else values.describe()


def _retry_keys() -> list[Key]:
    hints, docs = type_hints(RetryPolicy), attribute_docs(RetryPolicy)
    return [
        Key(f"retry.{f.name}", type_name(hints[f.name]), f.default, _limits(f.metadata),
            _need(docs.get(f.name, ""), f"RetryPolicy.{f.name}"))
        for f in fields(RetryPolicy)
    ]  # fmt: skip


def role_options(conf: Path, group: str) -> list[Table]:
    """Each option of a model role's group with the values it sets (its model file's included)."""
    tables = []
    for path in sorted((conf / group).glob("*.yaml")):
        data, intro, _ = read_conf(path)
        values = dict(_inherited(conf, data))
        values.update(flat_keys(data))
        sets = tuple(f"{k}={yaml_text(v)}" for k, v in values.items())
        tables.append(Table(f"{group}={path.stem}", f"{group}/{path.name}", intro, (), sets))
    return tables


def _inherited(conf: Path, data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The keys a ``defaults: [/model/<alias>@_here_]`` entry brings in."""
    for entry in data.get("defaults") or []:
        if isinstance(entry, str) and entry.startswith("/") and entry.endswith("@_here_"):
            inner, _, _ = read_conf(conf / f"{entry[1:].removesuffix('@_here_')}.yaml")
            yield from flat_keys(inner)


def data_tables(conf: Path) -> list[Table]:
    """``data``'s keys (``DataConfig``'s and the plugin sources'), then each option's values."""
    hints, docs = type_hints(DataConfig), attribute_docs(DataConfig)
    keys = []
    for field in fields(DataConfig):
        if field.name == "options":
            continue
        readers = [s for s, read in SOURCE_KEYS.items() if field.name in read]
        note = f"Read by: {', '.join(readers)}." if field.name != "source" and readers else ""
        description = _need(docs.get(field.name, ""), f"DataConfig.{field.name}")
        default = field.default if field.default is not MISSING else REQUIRED
        keys.append(
            Key(field.name, type_name(hints[field.name]), default, "",
                f"{description} {note}".strip())
        )  # fmt: skip
    tables = [Table("data", "data/", "", tuple(keys))]
    for path in sorted((conf / "data").glob("*.yaml")):
        data, intro, comments = read_conf(path)
        own = []
        source = str(data.get("source"))
        if source not in SOURCE_KEYS and source in available("data"):
            hints = type_hints(load(available("data")[source]).load)
            for name, value in flat_keys(data):
                if name not in ("source", "limit"):
                    where = f"conf/data/{path.name}: {name}"
                    own.append(
                        Key(name, type_name(hints.get(name, Any)), value, "",
                            _need(comments.get(name, ""), where))
                    )  # fmt: skip
        theirs = {k.name for k in own}
        sets = tuple(f"{k}={yaml_text(v)}" for k, v in flat_keys(data) if k not in theirs)
        tables.append(Table(f"data={path.stem}", f"data/{path.name}", intro, tuple(own), sets))
    return tables


def plugin_tables(conf: Path, group: str) -> list[Table]:
    """One table per option file of ``strategy`` or ``metrics``: the plugin's parameters."""
    tables = []
    for path in sorted((conf / group).glob("*.yaml")):
        data, intro, comments = read_conf(path)
        composed = tuple(
            "composes " + e[1:].removesuffix("@_here_").replace("/", "=")
            for e in data.get("defaults") or []
            if isinstance(e, str) and e.startswith("/")
        )
        blocks = {"": data} if group == "strategy" else dict(data)
        keys: list[Key] = []
        for label, block in blocks.items():
            if label in SKIPPED or not isinstance(block, dict):
                continue
            keys.extend(_plugin_keys(group, label, block, comments, path))
        title = f"{group}={path.stem}"
        tables.append(Table(title, f"{group}/{path.name}", intro, tuple(keys), composed))
    return tables


def _plugin_keys(
    group: str, label: str, block: dict[str, Any], comments: dict[str, str], path: Path
) -> list[Key]:
    """The keys of one plugin block: its function's keyword-only parameters, in YAML order."""
    prefix = f"{label}." if label else ""
    target = str(block.get("name") or label)
    plugin = available("strategy" if group == "strategy" else "metrics").get(target)
    params: dict[str, inspect.Parameter] = {}
    hints: dict[str, Any] = {}
    if plugin is not None:
        fn = getattr(load(plugin), PLUGIN_GROUPS[group])
        params = dict(declared(fn).params)
        hints = type_hints(fn)
    keys = []
    names = list(block) + [p for p in params if p not in block]
    for name in names:
        where = f"conf/{group}/{path.name}: {prefix}{name}"
        if name == "name":
            description = comments.get(f"{prefix}name") if label else ""
            text = description or (
                f"The {group} plugin to run: a registered name, an import path or a "
                "<name>.py in the folder you run from."
            )
            keys.append(Key(f"{prefix}name", "str", block[name], "", text))
            continue
        if plugin is not None and name not in params:
            raise ReferenceError(f"{where} is not a parameter of {target}'s {PLUGIN_GROUPS[group]}")
        param = params.get(name)
        default = block.get(name, None if param is None else param.default)
        hint = hints.get(name, Any if param is None else param.annotation)
        description = _need(comments.get(f"{prefix}{name}", ""), where)
        keys.append(Key(f"{prefix}{name}", type_name(hint), default, allowed_values(hint),
                        description))  # fmt: skip
    return keys


def preset_tables(conf: Path, group: str) -> list[Table]:
    """The presets of ``group``: each file's opening comment and the keys it sets."""
    tables = []
    for path in sorted((conf / group).glob("*.yaml")):
        data, intro, _ = read_conf(path)
        swept = ((data.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
        defaults = [
            f"{k.removeprefix('override /')}={v}"
            for entry in data.get("defaults") or []
            if isinstance(entry, dict)
            for k, v in entry.items()
        ]
        sets = (
            *defaults,
            *(f"{k}={yaml_text(v)}" for k, v in flat_keys(data)),
            *(f"-m {k}={v}" for k, v in swept.items()),
        )
        tables.append(Table(f"{group}={path.stem}", f"{group}/{path.name}", intro, (), sets))
    return tables


def report_table(conf: Path, report_config: type) -> Table:
    """``conf/report.yaml``: ``python -m runner.report``'s keys, typed by ``report_config``.

    ``ReportConfig`` is passed in: ``runner.config`` may not import ``runner.report``.
    """
    data, intro, comments = read_conf(conf / "report.yaml")
    hints = type_hints(report_config)
    keys = []
    for name, value in flat_keys(data):
        field = REPORT_FIELDS.get(name) or REPORT_NAMES.get(name, name)
        if field not in hints:
            raise ReferenceError(f"report.yaml: {name} is not a ReportConfig field")
        kind = type_name(hints[field]).replace("Path", "str")
        if value is None and "null" not in kind:  # the field holds the resolved value
            kind += " or null"
        description = _need(comments.get(name, ""), name)
        keys.append(Key(name, kind, value, "", description))
    return Table("python -m runner.report", "report.yaml", intro, tuple(keys))


@dataclass(frozen=True)
class Reference:
    """Every table of the config reference, in the page's order."""

    top: Table
    roles: Table
    role_options: dict[str, list[Table]]
    data: list[Table]
    strategies: list[Table]
    metrics: list[Table]
    presets: dict[str, list[Table]]
    report: Table

    def lookup(self, file: str, key: str) -> Key | None:
        """The reference's entry for ``key`` as written in ``conf/<file>`` (None: not there)."""
        group, _, _ = file.rpartition("/")
        if not group:
            table = self.report if file == "report.yaml" else self.top
            return _find(table.keys, key)
        if group in ROLE_GROUPS:
            return _find(self.roles.keys, key)
        tables = {"data": self.data, "strategy": self.strategies, "metrics": self.metrics}
        if group in tables:
            own = [t for t in tables[group] if t.file == file]
            base = tables[group][:1] if group == "data" else []
            return _find([k for t in own + base for k in t.keys], key)
        return self.lookup_global(key)

    def lookup_global(self, key: str) -> Key | None:
        """A key as a preset (``# @package _global_``) sets it: ``chunk``, ``data.limit``."""
        group, _, rest = key.partition(".")
        if group in ROLE_GROUPS:
            return _find(self.roles.keys, rest)
        tables = {"data": self.data, "strategy": self.strategies, "metrics": self.metrics}
        if group in tables:
            return _find([k for t in tables[group] for k in t.keys], rest)
        return _find(self.top.keys, key)


def _find(keys: typing.Iterable[Key], name: str) -> Key | None:
    return next((k for k in keys if k.name == name), None)


def build(report_config: type, conf: Path | None = None) -> Reference:
    """The whole reference from the config tree ``conf`` (default: the runner's own).

    ``report_config``: ``runner.report.config.ReportConfig``, whose types the report's keys
    have (passed in by the caller: ``runner.config`` may not import ``runner.report``).
    """
    conf = conf or conf_dir()
    reference = Reference(
        top=top_level(conf),
        roles=model_keys(),
        role_options={g: role_options(conf, g) for g in ROLE_GROUPS},
        data=data_tables(conf),
        strategies=plugin_tables(conf, "strategy"),
        metrics=plugin_tables(conf, "metrics"),
        presets={g: preset_tables(conf, g) for g in PRESET_GROUPS},
        report=report_table(conf, report_config),
    )
    for tables in reference.presets.values():
        for table in tables:
            data, _, _ = read_conf(conf / table.file)
            for key, _ in flat_keys(data):
                if reference.lookup_global(key) is None:
                    raise ReferenceError(f"conf/{table.file}: {key} is not a documented key")
    return reference
