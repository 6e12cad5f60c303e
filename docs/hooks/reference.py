"""MkDocs hook: the reference pages generated from the code on every build.

``<!-- generated: config-keys -->`` in ``docs/reference/config.md`` becomes the config
reference (``runner/config/reference/``: ``tables.py`` reads the schema the runner validates with,
``markdown.py`` writes it); ``<!-- generated: commands -->`` in
``docs/reference/commands.md`` becomes the options of every command, read from the commands'
own parsers (argparse, Hydra's, mlflow's click command) by the functions below. A generator
that fails, or a key without a description, raises: the build fails rather than publish a
reference that no longer matches the code.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # a clone built without installing it
    sys.path.insert(0, str(ROOT))

CONFIG_MARKER = "<!-- generated: config-keys -->"
COMMANDS_MARKER = "<!-- generated: commands -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Put the generated reference in place of its marker (pages without one pass through)."""
    if CONFIG_MARKER in markdown:
        markdown = markdown.replace(CONFIG_MARKER, config_keys())
    if COMMANDS_MARKER in markdown:
        markdown = markdown.replace(COMMANDS_MARKER, commands())
    return markdown


def config_keys() -> str:
    """The config reference's Markdown (raises ``ReferenceError`` on an undescribed key)."""
    from runner.config.reference import build, markdown
    from runner.report.config import ReportConfig

    return markdown(build(ReportConfig))


def cell(text: object) -> str:
    """Text for a Markdown table cell: one line, ``<`` and ``|`` escaped."""
    return " ".join(str(text).split()).replace("<", "&lt;").replace("|", "\\|")


def argparse_tables(parser: argparse.ArgumentParser, command: str) -> list[str]:
    """A parser's arguments as a table, then each subcommand's under its own heading."""
    rows, subcommands = [], []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            subcommands += [
                (name, sub, helps.get(name, "")) for name, sub in action.choices.items()
            ]
            continue
        metavar = action.metavar if isinstance(action.metavar, str) else None
        name = ", ".join(action.option_strings) or (metavar or action.dest)
        value = "" if action.nargs == 0 else f" {metavar or action.dest.upper()}"
        if action.option_strings and value:
            name += value
        if action.nargs in ("*", "+"):
            name += " ..."
        choices = ", ".join(map(str, action.choices)) if action.choices else ""
        hidden = action.default in (None, [], False, argparse.SUPPRESS)
        default = "" if hidden else f"`{action.default}`"
        rows.append(f"| `{cell(name)}` | {cell(action.help or '')} | {choices} | {default} |")
    out = []
    if rows:
        out += ["| Argument | What it does | Choices | Default |", "|---|---|---|---|", *rows, ""]
    for name, sub, help_text in subcommands:
        out += [f"### `{command} {name}`", "", cell(help_text), ""]
        out += argparse_tables(sub, f"{command} {name}")
    return out


def hydra_flags() -> list[str]:
    """The flags of a Hydra command (``python -m runner``, ``python -m runner.report``)."""
    from hydra._internal.utils import get_args_parser

    rows = []
    for action in get_args_parser()._actions:
        if not action.option_strings:
            continue
        help_text = str(action.help or "").split("\n")[0]
        rows.append(f"| `{', '.join(action.option_strings)}` | {cell(help_text)} |")
    return ["| Flag | What it does |", "|---|---|", *rows, ""]


def config_groups() -> list[str]:
    """``python -m runner``'s config groups and their options, as Hydra lists them.

    The runner's groups (``conf/``) and the two Hydra groups a researcher picks: the sweeper
    and the launcher (plugins installed in this environment included). A retired option
    (kept only for its error message) is left out, as ``--help`` leaves it out.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path
    from hydra.core.plugins import Plugins

    from runner.__main__ import INTERNAL_GROUPS
    from runner.config.hydra_errors import RETIRED_OPTIONS

    Plugins.instance()  # registers the installed plugins' config folders
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path("pkg://runner.conf"))
    groups = [g for g in sorted(loader.list_groups("")) if g != "hydra"]
    rows = []
    for group in [*groups, "hydra/sweeper", "hydra/launcher"]:
        offered = [
            o for o in loader.get_group_options(group) if o not in RETIRED_OPTIONS.get(group, ())
        ]
        options = ", ".join(f"`{o}`" for o in offered)
        anchor = GROUP_ANCHORS.get(group)
        where = f"[keys](config.md#{anchor})" if anchor else LAUNCHERS
        if group in INTERNAL_GROUPS:
            where += " (composed for you when the model and strategy match; never picked)"
        rows.append(f"| `{group}` | {options} | {where} |")
    if len(groups) < 5:
        raise RuntimeError(f"Hydra lists only {groups} in pkg://runner.conf; install the runner")
    return ["| Group | Options | Reference |", "|---|---|---|", *rows, ""]


LAUNCHERS = "[Sweeps and launchers](../guides/sweeps-and-launchers.md)"


GROUP_ANCHORS = {
    "data": "data",
    "embedder": "embedder",
    "evaluator": "evaluator",
    "experiment": "experiment",
    "judge": "judge",
    "metrics": "metrics",
    "model": "model",
    "model_strategy": "model_strategy",
    "strategy": "strategy",
}
"""Group -> its section's anchor on the config page (headings: ``reference/markdown.py``)."""


def view_options() -> list[str]:
    """``python -m runner.view``'s ``key=value`` options (a tuple of names, or name -> help)."""
    from runner.view import cli

    options = cli.OPTIONS
    helps = options if isinstance(options, dict) else dict.fromkeys(options, "")
    rows = [f"| `{key}=` | {cell(text)} |" for key, text in helps.items()]
    return [f"`{cell(cli.USAGE)}`", "", "| Option | What it does |", "|---|---|", *rows, ""]


def mlflow_ui_options() -> list[str]:
    """``mlflow ui``'s options, from its click command (``python -m runner.ui`` passes them)."""
    import warnings

    import click

    with warnings.catch_warnings():  # SQLAlchemy's deprecation notes at mlflow's import
        warnings.simplefilter("ignore")
        from mlflow.cli import cli

    command = cli.get_command(click.Context(cli), "ui")  # type: ignore[no-untyped-call]
    if command is None:
        raise RuntimeError("mlflow has no 'ui' command; check the installed mlflow")
    rows = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        default = param.default if param.default not in (None, False, ()) else ""
        default = "" if callable(default) else default
        help_text = cell(param.help or "")
        rows.append(f"| `{', '.join(param.opts)}` | {help_text} | {cell(default)} |")
    return ["| Option | What it does | Default |", "|---|---|---|", *rows, ""]


def commands() -> str:
    """The Markdown of ``docs/reference/commands.md``'s generated part."""
    from runner import batches, ui
    from runner.annotate.__main__ import parser as annotate_parser

    out = ["## `python -m runner`", "", RUNNER_INTRO, "", "### Flags", "", *hydra_flags()]
    out += ["### Config groups", "", *config_groups()]
    out += ["## `python -m runner.report`", "", REPORT_INTRO, "", *hydra_flags()]
    out += ["## `python -m runner.annotate`", "", cell(annotate_parser().description or ""), ""]
    out += argparse_tables(annotate_parser(), "python -m runner.annotate")
    out += ["## `python -m runner.view`", "", cell(_about(_doc("runner.view.cli"))), ""]
    out += view_options()
    out += ["## `python -m runner.ui`", "", *_ui_intro(ui), "", *mlflow_ui_options()]
    out += ["## `python -m runner.batches`", "", cell(batches.parser().description or ""), ""]
    out += argparse_tables(batches.parser(), "python -m runner.batches")
    return "\n".join(out)


def _doc(module: str) -> str:
    import importlib

    return inspect.getdoc(importlib.import_module(module)) or ""


def _about(text: str) -> str:
    """A module docstring's first paragraph that is prose, not the command's usage line."""
    paragraphs = [p for p in text.split("\n\n") if not p.startswith("``python -m")]
    return (paragraphs[0] if paragraphs else "").replace("``", "`")


def _ui_intro(ui: Any) -> list[str]:
    """``runner/ui.py``'s docstring: what the runner adds to ``mlflow ui``, its examples as code."""
    paragraphs = (inspect.getdoc(ui) or "").replace("``", "`").split("\n\n")
    out = []
    for paragraph in paragraphs:
        if paragraph.startswith("    "):
            out += ["```bash", inspect.cleandoc(paragraph), "```", ""]
        else:
            out += [cell(paragraph), ""]
    return out


RUNNER_INTRO = (
    "One job, or a sweep with `-m`: `python -m runner [FLAGS] [group=option ...] "
    "[key=value ...]` (installed: `summarization-runner`). Every key is in the "
    "[config reference](config.md); `--help` lists the groups and options, `--cfg job` "
    "prints the composed config."
)
REPORT_INTRO = (
    "Tables and figures from the MLflow runs of a sweep: `python -m runner.report "
    "[key=value ...]`. Its keys are those of `conf/report.yaml` "
    "([config reference](config.md#report)); the flags are Hydra's:"
)
