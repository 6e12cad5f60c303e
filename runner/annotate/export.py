"""``python -m runner.annotate export KIND``: write tasks.json, key.json and the labeling config.

``tasks.json`` is what a project imports in Label Studio (``[{"data": {...}}]``, blind);
``key.json`` maps each task's uid back to its document and system(s) and stays with the
researcher; ``labeling-<kind>.xml`` is the project's labeling config. ``import`` reads the
annotated export back with the key.
"""

from __future__ import annotations

import argparse
import json
import secrets
from pathlib import Path

from runner.annotate import tasks
from runner.annotate.configs import labeling_config
from runner.annotate.sources import SourceError, System, gather, named, read_json

TASKS_FILE = "tasks.json"
KEY_FILE = "key.json"


def config_file(kind: str) -> str:
    """``labeling-<kind>.xml``."""
    return f"labeling-{kind}.xml"


def build(args: argparse.Namespace, uri: str) -> tasks.Export:
    """The tasks and key of the command line's kind, systems and seed."""
    systems = gather(uri, list(args.run), list(args.system))
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    if args.kind == "preference":
        return tasks.preference(systems, seed)
    if args.kind == "coherence":
        return tasks.coherence(systems, seed)
    if args.kind == "claims":
        return _claims(uri, systems, seed)
    return tasks.validation(_annotations(systems, list(args.annotations)), seed)


def _claims(uri: str, systems: list[System], seed: int) -> tasks.Export:
    """Each run's summaries with their claims (``runner.annotate.claims``), mixed in one order."""
    from runner.annotate.claims import claimed

    runs = [s for s in systems if s.run]
    named = [s.name for s in systems if not s.run]
    if named or not runs:
        raise SourceError(
            "claims tasks take runs (their claims.json, or their data's claims), not "
            f"--system files ({', '.join(named) or 'none given'}); give run ids"
        )
    summaries, notes = [], []
    for system in runs:
        found, gaps = claimed(uri, system)
        summaries += [(system.name, c) for c in found]
        notes += gaps
    export = tasks.claims(summaries, seed)
    return tasks.Export(export.tasks, export.key, notes)


def _annotations(systems: list[System], files: list[str]) -> list[tasks.Annotation]:
    """A run's own judge annotations, then each ``SOURCE=FILE`` (model or human format)."""
    if len(systems) > 1:
        raise SourceError("validation tasks take one run or one --system; give one")
    summaries = systems[0].summaries if systems else {}
    found: list[tasks.Annotation] = []
    for system in systems:
        if system.annotations is not None:
            origin = f"run {system.name}'s annotations.json"
            found += tasks.annotations_of(system.name, system.annotations, summaries, origin)
    for source, file in map(named, files):
        data = read_json(Path(file), "annotations")
        found += tasks.annotations_of(source, data, summaries, f"annotations file {file}")
    return found


def write(export: tasks.Export, kind: str, out: Path) -> list[Path]:
    """The three files in ``out`` (created); their paths."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        out / TASKS_FILE: json.dumps(export.tasks, indent=1, ensure_ascii=False) + "\n",
        out / KEY_FILE: json.dumps(export.key, indent=1, ensure_ascii=False) + "\n",
        out / config_file(kind): labeling_config(kind),
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
    paths = write(export, args.kind, Path(args.out))
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
