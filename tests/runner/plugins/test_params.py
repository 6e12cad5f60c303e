"""A plugin's parameters are declared once, by its entry function (``runner.api.params``).

The built-ins' YAML files in ``conf/`` restate those defaults so that a researcher reads and
overrides them there (Hydra composes only the keys a file has); this holds every such value
equal to what ``summarize`` or ``setup`` declares, so neither copy can drift from the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from runner.api.params import declared
from runner.plugins.registry import available, load

CONF = Path(__file__).resolve().parents[3] / "conf"
GROUPS = {"strategy": "summarize", "metrics": "setup"}
RETIRED = {"precomputed"}
"""Names kept in conf/ only so that an old spelling gets a clear error."""


def _blocks(group: str, path: Path) -> dict[str, dict[str, Any]]:
    """A file's plugin blocks: the file itself for a strategy, each mapping for metrics."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if group == "strategy":
        return {path.stem: data}
    return {label: block for label, block in data.items() if isinstance(block, dict)}


def test_the_built_ins_yaml_restates_exactly_the_defaults_their_functions_declare() -> None:
    compared, differ = 0, []
    for group, entry in GROUPS.items():
        for path in sorted((CONF / group).glob("*.yaml")):
            for label, block in _blocks(group, path).items():
                name = str(block.get("name") or label)
                if name in RETIRED:
                    continue
                defaults = declared(getattr(load(available(group)[name]), entry)).defaults
                for key, value in block.items():
                    if key == "name":
                        continue
                    assert key in defaults, f"conf/{group}/{path.name}: {key} has no default"
                    code = defaults[key]
                    compared += 1
                    if value != (list(code) if isinstance(code, tuple) else code):
                        differ.append(f"{path.name}: {label}.{key} {value!r} vs {code!r}")
    assert compared > 60  # every built-in's parameters, not a few
    assert differ == []


def test_declared_reads_keyword_parameters_their_defaults_and_kwargs() -> None:
    def summarize(chunks: list[str], model: object, *, k: int = 3, style: str) -> None: ...

    def loose(chunks: list[str], *, k: int = 1, **more: object) -> None: ...

    found = declared(summarize)
    assert list(found.params) == ["k", "style"] and found.defaults == {"k": 3}
    assert found.accepts("k") and not found.accepts("model") and not found.open
    assert declared(loose).open and declared(loose).accepts("anything")
