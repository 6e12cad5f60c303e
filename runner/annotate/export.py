"""``python -m runner.annotate export KIND``: write tasks.json, key.json and the labeling config.

``tasks.json`` is what a project imports in Label Studio (``[{"data": {...}}]``, blind);
``key.json`` maps each task's uid back to its document and system(s) and stays with the
researcher; ``labeling-<kind>.xml`` is the project's labeling config. ``import`` reads the
annotated export back with the key.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
from pathlib import Path

from runner.annotate import tasks
from runner.annotate.sources import SourceError, gather, named
from runner.api.human_task import TaskInput
from runner.human.task_kinds import task_kind

TASKS_FILE = "tasks.json"
KEY_FILE = "key.json"


def config_file(kind: str) -> str:
    """``labeling-<kind>.xml``."""
    return f"labeling-{kind}.xml"


def build(args: argparse.Namespace, uri: str) -> tasks.Export:
    """The tasks and key of the command line's kind, systems and seed."""
    kind = task_kind(args.kind, args.metric or "")
    if args.annotations and not kind.task.inputs:
        raise SourceError(
            f"{kind.task.kind} tasks take no --annotations; leave it out (it gives a kind's "
            "own inputs, such as validation's annotations)"
        )
    systems = gather(uri, list(args.run), list(args.system))
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    files = tuple((source, Path(file)) for source, file in map(named, args.annotations))
    inputs = TaskInput(tuple(systems), files, random.Random(seed))
    return tasks.build(kind, inputs, seed)


def write(export: tasks.Export, out: Path, metric: str = "") -> list[Path]:
    """The three files in ``out`` (created); their paths."""
    kind = str(export.key["kind"])
    out.mkdir(parents=True, exist_ok=True)
    files = {
        out / TASKS_FILE: json.dumps(export.tasks, indent=1, ensure_ascii=False) + "\n",
        out / KEY_FILE: json.dumps(export.key, indent=1, ensure_ascii=False) + "\n",
        out / config_file(kind): task_kind(kind, metric).task.config(),
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return list(files)


def run(args: argparse.Namespace, uri: str) -> int:
    """Build and write the export; print what was written (errors propagate as SourceError)."""
    if (Path(args.out) / KEY_FILE).exists() and not args.force:
        raise SourceError(
            f"{Path(args.out) / KEY_FILE} exists: it may be the key of tasks already out for "
            "annotation; choose another --out, or pass --force to replace it"
        )
    export = build(args, uri)
    paths = write(export, Path(args.out), args.metric or "")
    documents = len({entry["doc_id"] for entry in export.key["tasks"].values()})
    print(
        f"{len(export.tasks)} {args.kind} tasks over {documents} documents, "
        f"seed {export.key['seed']}"
    )
    for path in paths:
        print(f"  wrote {path}")
    print(f"keep {paths[1].name} apart from the annotators; import {paths[0].name} into a project")
    print(f"whose labeling config is {paths[2].name}")
    for note in export.notes:
        print(f"  note: {note}")
    return 0
