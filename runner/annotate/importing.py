"""``python -m runner.annotate import EXPORT``: a Label Studio export back as judgments.

The export is read by ``runner.human.labelstudio.read_labelstudio``, with the key that
``export`` wrote (our own tasks) or each system's summaries (``--system NAME=FILE``: the
authors' exports, matched by summary text). The one-screen summary counts the judgments per
kind and annotator and lists every task left unattributed, which is never guessed. The
judgments become a human run in MLflow (``runner.human.record.record_human_run``: in the
experiment of the runs judged, with HUMAN assessments on their traces) unless ``--no-record``,
or unless the store holds them already (``--force`` records them again), and a JSON-lines file
of ``to_record`` lines with ``--out``.

A file given with no key, system, run or kind that is not a Label Studio export is offered to
the people's-judgment file formats the metrics declare (``HUMAN_FILES``, through
``runner.human.claim_files``): the one that recognizes it reads it, and its notes are printed
one line each. A ``.csv`` or ``.jsonl`` file none recognizes is a table of ratings
(``runner.human.table.read_table``: one row per document, system, criterion and annotator);
any other file none recognizes is one line naming the formats tried.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.annotate.sources import SourceError, gather, read_json
from runner.human.judgments import (
    CLAIM_LABELS,
    ClaimsJudgment,
    Judgment,
    Preference,
    Verdict,
    kind_of,
    to_record,
)

if TYPE_CHECKING:
    from runner.tracking.reader import RunRecord

_RUN_ID = re.compile(r"[0-9a-f]{32}")
LISTED = 15
TABLE_SUFFIXES = (".csv", ".jsonl", ".ndjson")
"""A file with one of these suffixes, recognized by no metric's format, is a ratings table."""
RATINGS_TABLE = "ratings table (.csv or .jsonl: document,system,criterion,value,annotator)"
"""Unmatched tasks listed on screen; the rest are counted."""


def read(args: argparse.Namespace, uri: str) -> tuple[list[Judgment], list[str]]:
    """The export's judgments and unmatched lines (``HumanDataError`` for a bad file)."""
    from runner.human.labelstudio import read_labelstudio

    key: dict[str, Any] | None = None
    if args.key is not None:
        key = read_json(Path(args.key), "key")
        if not isinstance(key, dict):
            raise SourceError(f"key file {args.key} is not an object; pass the key.json of export")
    systems = gather(uri, list(args.run), list(args.system))
    candidates = {s.name: s.summaries for s in systems} or None
    if key is None and candidates is None:
        raise SourceError(
            "give --key key.json (the key export wrote) or each system's summaries "
            "(--system NAME=FILE, or run ids) to attribute the tasks"
        )
    export = Path(args.export)
    if not export.is_file():
        raise SourceError(f"export file {export} does not exist; export the project as JSON")
    return read_labelstudio(export, key, candidates, kind=args.kind)


def claim_file(args: argparse.Namespace) -> tuple[list[Judgment], list[str]] | None:
    """The judgments and notes of a metric's people's-judgment file or a ratings table, or None.

    A metric's format that recognizes the file reads it first; otherwise a ``.csv`` or
    ``.jsonl`` file is a ratings table (``runner.human.table``). None: a Label Studio export,
    or a file a key, system, run or kind says is one.
    """
    if args.key is not None or args.run or args.system or args.kind is not None:
        return None
    from runner.human.claim_files import claim_formats, read_claim_file, recognizing

    path = Path(args.export)
    if not path.is_file():
        raise SourceError(f"file {path} does not exist; check the path")
    formats = recognizing(path)
    if len(formats) > 1:
        both = " and ".join(f.label for f in formats)
        raise SourceError(f"{path} has the shape of {both}; import it with one of them removed")
    if formats:
        judgments, notes = read_claim_file(path, formats[0])
        return list(judgments), notes
    if path.suffix in TABLE_SUFFIXES:  # its reader names a missing column and the header to use
        from runner.human.table import read_table

        return list(read_table(path)), []
    if _labelstudio_shaped(path):
        return None
    tried = [f.label for f in claim_formats()] + [RATINGS_TABLE, "Label Studio JSON export"]
    raise SourceError(
        f"{path} is in no format known here (tried: {', '.join(tried)}); give a file of one of "
        "them, or --key/--system for a Label Studio export"
    )


def _labelstudio_shaped(path: Path) -> bool:
    """A JSON list of tasks (objects with ``data``): what Label Studio's JSON export is."""
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(tasks, list) and all(isinstance(t, dict) and "data" in t for t in tasks)


def summary(judgments: list[Judgment], unmatched: list[str], source: str) -> list[str]:
    """The one-screen summary: counts per kind and annotator, then the unmatched tasks."""
    lines = [f"{len(judgments)} judgments read from {source}"]
    per: Counter[tuple[str, str]] = Counter((kind_of(j), j.annotator) for j in judgments)
    for kind in sorted({k for k, _ in per}):
        people = sorted((a, n) for (k, a), n in per.items() if k == kind)
        listed = ", ".join(f"annotator {a}: {n}" for a, n in people)
        lines.append(f"  {kind}: {sum(n for _, n in people)} ({listed})")
    lines += tallies(judgments)
    if unmatched:
        lines.append(f"{len(unmatched)} tasks not attributed (not guessed):")
        lines += [f"  {line}" for line in unmatched[:LISTED]]
        if len(unmatched) > LISTED:
            lines.append(f"  ... and {len(unmatched) - LISTED} more")
    return lines


def tallies(judgments: list[Judgment]) -> list[str]:
    """Table 4's counts for one pair of systems, Appendix J's precision per source."""
    from runner.human.tally import precision, preference_counts

    lines = []
    pairs = [j for j in judgments if isinstance(j, Preference)]
    if pairs and len({frozenset(p.systems) for p in pairs}) == 1:
        counts = preference_counts(pairs, pairs[0].systems)
        for criterion, wins in counts.wins.items():
            shown = ", ".join(f"{_short(name)} {n}" for name, n in wins.items())
            lines.append(f"  {criterion}: {shown}")
    verdicts = [j for j in judgments if isinstance(j, Verdict)]
    for source, p in precision(verdicts).items():
        lines.append(f"  precision of {_short(source)}: {p.agreed}/{p.total} agreed")
    return lines + claim_tallies([j for j in judgments if isinstance(j, ClaimsJudgment)])


def claim_tallies(claims: list[ClaimsJudgment]) -> list[str]:
    """Faithfulness judgments: summaries with a label (how many faithful), claims per label."""
    if not claims:
        return []
    labelled = [j for j in claims if j.faithful is not None]
    faithful = sum(1 for j in labelled if j.faithful)
    counts = Counter(c.label for j in claims for c in j.claims)
    per_label = ", ".join(f"{label} {counts[label]}" for label in CLAIM_LABELS)
    return [
        f"  summaries with a label: {len(labelled)} ({faithful} faithful)",
        f"  claims labelled: {sum(counts.values())} ({per_label})",
    ]


def _short(system: str) -> str:
    """A run id as its first 8 characters (as MLflow's UI shows it); a name as it is."""
    return system[:8] if _RUN_ID.fullmatch(system) else system


def write_jsonl(judgments: list[Judgment], out: Path) -> None:
    """One ``to_record`` JSON object per line."""
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(to_record(j), ensure_ascii=False) + "\n" for j in judgments)
    out.write_text(text, encoding="utf-8")


def already_line(run: RunRecord, count: int) -> str:
    """The one line saying the store holds these judgments already (and how to add them)."""
    from runner.human.identity import when

    source = run.tags.get("human.source", "?")
    return (
        f"already recorded: human run {run.run_id} (started {when(run)}, from {source}) holds "
        f"these {count} judgments; nothing recorded (--force records them again)"
    )


def run(args: argparse.Namespace, uri: str) -> int:
    """Read, print the summary, write ``--out``, record the human run.

    0, or 1 when tasks were read but none could be attributed. Judgments the store already
    holds (the same ones, by the same annotators) are not recorded again without ``--force``:
    the store already is as asked, so that is 0 too (a rerun script carries on), and the
    line says so.
    """
    found = claim_file(args)
    if found is None:
        judgments, unmatched = read(args, uri)
    else:
        (judgments, notes), unmatched = found, []
        for note in notes:
            print(note)
    print("\n".join(summary(judgments, unmatched, args.export)))
    if args.out is not None:
        write_jsonl(judgments, Path(args.out))
        print(f"wrote {len(judgments)} judgments to {args.out}")
    if judgments and not args.no_record:
        from runner.human.matching import check_experiment
        from runner.human.record import record_human_run

        if args.experiment is not None and not args.create_experiment:
            check_experiment(uri, args.experiment)  # a typo would hide the labels from reports
        human = record_human_run(
            uri,
            args.experiment,
            judgments,
            args.export,
            force=args.force,
            matched_only=args.matched_only,
        )
        if human.already is not None:
            print(already_line(human.already, len(judgments)))
            return 0
        for note in human.notes:
            print(note)
        print(f"recorded human run {human.run_id} in {uri}")
        if any(isinstance(j, ClaimsJudgment) for j in judgments) and not human.claims_judged:
            print("  no judged run found; assessments not written")
        if human.assessments:
            print(f"  {human.assessments} HUMAN assessments on the judged documents' traces")
        if human.untraced:
            print(f"  {len(human.untraced)} judged documents have no trace to annotate")
    return 0 if judgments or not unmatched else 1
