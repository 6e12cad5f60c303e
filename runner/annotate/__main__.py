"""``python -m runner.annotate export|import``: the command line (argparse).

A wrong argument, a missing run or file, or a bad export is one line on stderr and exit 2.
The store is ``tracking.uri=URI``, as in every command (a word anywhere on the line);
``--tracking-uri URI``, this command's first spelling, means the same.
"""

from __future__ import annotations

import argparse
import sys

from runner.annotate.sources import SourceError
from runner.api.errors import RunnerError
from runner.config.folders import SpellingError, store_given

DESCRIPTION = "Summaries out to Label Studio as blind tasks; people's judgments back in."
STORE_HELP = (
    "tracking.uri=URI: the MLflow store (runs read, human runs recorded; default: "
    "sqlite:///<this folder>/mlruns/mlflow.db), as in every command; --tracking-uri URI means "
    "the same"
)
"""The store's option, written as every command takes it (argparse cannot show a key=value)."""


def parser() -> argparse.ArgumentParser:
    """The two subcommands and their options."""
    top = argparse.ArgumentParser(prog="python -m runner.annotate", description=DESCRIPTION)
    sub = top.add_subparsers(dest="command", required=True)
    out = sub.add_parser("export", help="write tasks.json, key.json and labeling-<kind>.xml")
    out.add_argument("kind", help=f"the task kind: {_kinds_help()}")
    out.add_argument("run", nargs="*", help="MLflow run ids: two for preference, one otherwise")
    out.add_argument("--out", required=True, help="folder to write the three files to")
    out.add_argument("--seed", type=int, help="seed of the order and sides (default: drawn)")
    out.add_argument("--force", action="store_true", help="replace an existing key.json in --out")
    _systems(out)
    out.add_argument(
        "--annotations",
        action="append",
        default=[],
        metavar="SOURCE=FILE",
        help="a kind's own inputs (validation: annotations to validate, BooookScore's or the "
        "authors' human format)",
    )
    back = sub.add_parser(
        "import",
        help="read a Label Studio JSON export, a release of people's labels, or a ratings table",
    )
    back.add_argument(
        "export",
        help="the project's export (Label Studio's JSON format), a file of people's labels "
        "in a format a metric declares (HUMAN_FILES; recognized by its shape), or a table of "
        "ratings (.csv with the header document,system,criterion,value,annotator, or .jsonl)",
    )
    back.add_argument("--key", help="key.json written by export (omit for the authors' files)")
    back.add_argument(
        "--run",
        action="append",
        default=[],
        help="a run whose summaries are candidates for matching by text (repeatable)",
    )
    back.add_argument("--kind", help="the task kind expected (default: any)")
    back.add_argument("--out", help="write the judgments here as JSON lines (to_record)")
    back.add_argument(
        "--no-record", action="store_true", help="do not write the human run to MLflow"
    )
    back.add_argument(
        "--force",
        action="store_true",
        help="record the judgments even when the store holds them already (counted twice)",
    )
    back.add_argument(
        "--experiment",
        help="experiment of the human run (default: the judged runs', else summarization); "
        "one the store has, unless --create-experiment",
    )
    back.add_argument(
        "--create-experiment",
        action="store_true",
        help="create --experiment when the store has no experiment of that name",
    )
    back.add_argument(
        "--matched-only",
        action="store_true",
        help="record only the judgments of documents their run has, and count the others "
        "(default: any such judgment refuses the import)",
    )
    _systems(back)
    for command in (out, back):
        command.add_argument(
            "--metric",
            help="a metric to find task kinds in (HUMAN_TASKS) beside the installed ones: a "
            "module file of this folder or an import path (a key names it when needed)",
        )
        _store_in_help(command)
    return top


def _kinds_help() -> str:
    """Each task kind with what people do in it and who declares it."""
    from runner.human.task_kinds import declared

    try:
        found, _ = declared()
    except RunnerError as err:  # two metrics declaring one kind: the command says it on use
        return str(err)
    return "; ".join(f"{k} ({d.task.help}; {d.origin})" for k, d in found.items())


def _systems(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--system",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a named system's summaries as a {doc_id: summary} JSON file (repeatable)",
    )
    command.add_argument("--tracking-uri", help=argparse.SUPPRESS)  # as tracking.uri=URI


def _store_in_help(command: argparse.ArgumentParser) -> None:
    """``tracking.uri=URI`` at the end of the usage line, and what it means below the options."""
    command.usage = f"{command.format_usage().removeprefix('usage: ').rstrip()} [tracking.uri=URI]"
    command.epilog = STORE_HELP


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; 2 with a one-line error when it cannot."""
    try:
        words, given = store_given(list(sys.argv[1:] if argv is None else argv))
    except SpellingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args = parser().parse_args(words)
    from runner.tracking.store import default_tracking_uri, missing_store, unusable_server

    uri = given or default_tracking_uri()
    missing = (missing_store(uri) if _reads_runs(args) else None) or unusable_server(uri)
    if missing:  # MLflow would create an empty store there and then miss the runs
        print(f"error: {missing}", file=sys.stderr)
        return 2
    try:
        if args.command == "export":
            from runner.annotate import export

            return export.run(args, uri)
        from runner.annotate import importing

        return importing.run(args, uri)
    except (SourceError, RunnerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _reads_runs(args: argparse.Namespace) -> bool:
    """Whether the command names runs to read (run ids given to export, ``--run`` to import)."""
    return bool(args.run)


if __name__ == "__main__":
    sys.exit(main())
