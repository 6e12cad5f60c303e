"""The config reference (``tables.py``) as the Markdown of the docs' page.

``docs/hooks/reference.py`` puts it in place of ``<!-- generated: config-keys -->`` in
``docs/reference/config.md`` on every build.
"""

from __future__ import annotations

import typing
from typing import Any

from runner.config.reference.sources import one_line, yaml_text
from runner.config.reference.tables import Key, Reference, Table

HEADER = "| Key | Type | Default | Allowed | Description |\n|---|---|---|---|---|"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: RST ``code`` as `code`, ``<`` and ``|`` escaped."""
    parts = text.replace("``", "`").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace("|", "\\|")
    return "`".join(p.replace("|", "\\|") if i % 2 else p for i, p in enumerate(parts))


def _rows(keys: typing.Iterable[Key], prefix: str = "") -> list[str]:
    return [
        f"| `{prefix}{k.name}` | {_cell(k.type)} | `{_cell(yaml_text(k.default))}` "
        f"| {_cell(k.allowed)} | {_cell(k.description)} |"
        for k in keys
    ]


def intro(text: str) -> list[str]:
    """A file's opening comment: its prose as a paragraph, its indented commands as code."""
    out: list[str] = []
    prose: list[str] = []
    code: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("  "):
            code.append(line[2:])
            continue
        if code:
            out += ([_cell(" ".join(prose)), ""] if prose else []) + ["```bash", *code, "```", ""]
            prose, code = [], []
        if line:
            prose.append(line)
    if prose:
        out += [_cell(" ".join(prose))]
    return out


def _section(table: Table, prefix: str, heading: str = "###") -> list[str]:
    lines = [f"{heading} {table.title}", "", f"File: `conf/{table.file}`.", ""]
    if table.intro:
        lines += [*intro(table.intro), ""]
    composes = [s.removeprefix("composes ") for s in table.sets if s.startswith("composes ")]
    sets = [s for s in table.sets if not s.startswith("composes ")]
    if composes:
        lines += ["Composes: " + ", ".join(f"`{s}`" for s in composes) + ".", ""]
    if sets:
        lines += ["Sets: " + ", ".join(f"`{s}`" for s in sets) + ".", ""]
    if table.keys:
        lines += [HEADER, *_rows(table.keys, prefix), ""]
    return lines


def markdown(ref: Reference) -> str:
    """The generated part of ``docs/reference/config.md``."""
    out = [
        "## Top level",
        "",
        f"File: `conf/{ref.top.file}`. " + _cell(one_line(ref.top.intro)),
        "",
    ]
    out += [HEADER, *_rows(ref.top.keys), ""]
    out += ["## Model roles", "", _cell(ROLES_INTRO), "", HEADER, *_rows(ref.roles.keys), ""]
    defaults = {k.name: k.default for k in ref.roles.keys}
    for group, tables in ref.role_options.items():
        out += [f"### {group}", ""]
        for table in tables:
            changed = [s for s in table.sets if _differs(s, defaults)]
            out += [f"- `{table.title}` (`conf/{table.file}`): {_cell(one_line(table.intro))}"]
            out += ["  Sets " + ", ".join(f"`{_cell(s)}`" for s in changed) + "."]
        out += [""]
    out += ["## data", "", _cell(DATA_INTRO), "", HEADER, *_rows(ref.data[0].keys, "data."), ""]
    for table in ref.data[1:]:
        out += _section(table, "data.")
    out += ["## strategy", "", _cell(PLUGIN_INTRO.format(group="strategy", fn="summarize")), ""]
    for table in ref.strategies:
        out += _section(table, "strategy.")
    out += ["## metrics", "", _cell(PLUGIN_INTRO.format(group="metrics", fn="setup")), ""]
    for table in ref.metrics:
        out += _section(table, "metrics.")
    for group, tables in ref.presets.items():
        out += [f"## {group}", "", _cell(PRESET_INTRO[group]), ""]
        for table in tables:
            out += _section(table, "")
    out += ["## Report", "", *intro(ref.report.intro), "", HEADER, *_rows(ref.report.keys), ""]
    return "\n".join(out)


def _differs(setting: str, defaults: dict[str, Any]) -> bool:
    key, _, value = setting.partition("=")
    return key not in defaults or value != yaml_text(defaults[key])


ROLES_INTRO = (
    "Every option of the groups model, judge, evaluator and embedder is one model, checked "
    "as a `ModelSpec` (`runner/llm/spec.py`) with its `retry` block a `RetryPolicy` "
    "(`runner/llm/retry.py`). Set a key of a role on the command line as "
    "`<role>.<key>=<value>`: `model.concurrency=4`, `judge.retry.max_attempts=3`. "
    "Default is the code's; each option below lists the values its file sets apart from it."
)
DATA_INTRO = (
    "`data=<option>` picks where the documents come from (`DataConfig`, "
    "`runner/config/data_config.py`); each source reads only its own keys and refuses the "
    "others. A data loader plugin reads the keys its `KEYS` declare."
)
PLUGIN_INTRO = (
    "`{group}=<option>` picks one option file; its keys are the keyword-only parameters of "
    "the plugin's `{fn}` (type and default from its signature, the value shown from the "
    "file), set on the command line as `{group}.<key>=<value>`. An unknown key is an error "
    "naming the valid ones."
)
PRESET_INTRO = {
    "experiment": (
        "`+experiment=<preset>`: a sweep in one word. A preset adds no key of its own: it "
        "picks options and sets the keys described above, and runs as a `-m` sweep."
    ),
    "model_strategy": (
        "Composed by itself for one model with one strategy (`conf/config.yaml`: "
        "`optional model_strategy: ${model}_${strategy}`); it sets keys described above. "
        "Any of them can still be overridden on the command line."
    ),
}
