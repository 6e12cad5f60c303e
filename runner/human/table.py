"""Read a plain per-document table of human scores or labels into Ratings.

For judgments from any tool other than Label Studio (a spreadsheet of Likert ratings, a
form's export): one row per (document, system, criterion, annotator) with its ``value``.
CSV (with a header; as a spreadsheet saves it, ``runner.api.spreadsheet``) or JSON lines (one
object per line), by the file's suffix. ``system``
is an MLflow run id or a named system. A criterion with any numeric value is numeric: every
value of it must then be a number (a stray "n/a" would otherwise turn a mean into a crash
later, or into nothing).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from runner.api.judging import as_number
from runner.api.spreadsheet import header_and_rows, read_text
from runner.human.attribute import bad
from runner.human.judgments import HumanDataError, Rating

COLUMNS = ("document", "system", "criterion", "value", "annotator")
"""The columns every row needs (others are ignored)."""
_Row = tuple[int, dict[str, Any]]


def read_table(path: Path, numeric: Collection[str] = ()) -> list[Rating]:
    """The Ratings of a CSV or JSONL table, in row order.

    ``numeric`` names criteria that must be numbers even where no row has one. A missing
    column, an empty cell, a non-number where a number is expected or a row given twice
    (same document, system, criterion and annotator) is a HumanDataError.
    """
    rows = list(_jsonl_rows(path) if path.suffix in (".jsonl", ".ndjson") else _csv_rows(path))
    if not rows:
        raise HumanDataError(f"{path}: has no rows; write one row per document and criterion")
    numbers = set(numeric) | {
        str(r["criterion"]) for _, r in rows if as_number(r["value"]) is not None
    }
    ratings = []
    seen: set[tuple[str, str, str, str]] = set()
    for line, row in rows:
        document, system, criterion, annotator = (
            str(row[c]) for c in ("document", "system", "criterion", "annotator")
        )
        where = f"row {line} (book {document!r})"
        value: float | str = str(row["value"])
        if criterion in numbers:
            number = as_number(row["value"])
            if number is None:
                problem = f"{row['value']!r} is not a number, and {criterion!r} is scored"
                raise bad(path, where, "value", problem, "write a number (or drop the row)")
            value = number
        identity = (document, system, criterion, annotator)
        if identity in seen:
            problem = f"a second {criterion!r} value of {system} by {annotator}"
            raise bad(path, where, "value", problem, "keep one row per judgment")
        seen.add(identity)
        ratings.append(Rating(document, system, criterion, value, annotator))
    return ratings


def _checked(path: Path, line: int, row: dict[str, Any]) -> _Row:
    """The row, after checking it has every column and no empty cell."""
    missing = [c for c in COLUMNS if c not in row]
    if missing:
        raise bad(
            path,
            f"row {line}",
            missing[0],
            f"missing column(s) {missing} (has {sorted(row)})",
            f"give every row the columns {list(COLUMNS)}",
        )
    empty = [c for c in COLUMNS if row[c] is None or str(row[c]).strip() == ""]
    if empty:
        where = f"row {line} (book {row['document']!r})"
        raise bad(path, where, empty[0], "is empty", "fill it in or drop the row")
    return line, {c: row[c].strip() if isinstance(row[c], str) else row[c] for c in COLUMNS}


def _csv_rows(path: Path) -> Iterator[_Row]:
    """Rows of a CSV file with a header line, as a spreadsheet saves it.

    Read by ``runner.api.spreadsheet``, the one CSV reader.
    """
    try:
        header, rows = header_and_rows(read_text(path))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise HumanDataError(f"{path}: cannot be read as CSV ({e}); save it as UTF-8 CSV") from e
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise bad(
            path,
            "header",
            missing[0],
            f"missing column(s) {missing} (has {header})",
            f"start the file with the header {','.join(COLUMNS)}",
        )
    for line, row in rows:
        yield _checked(path, line, row)


def _jsonl_rows(path: Path) -> Iterator[_Row]:
    """Rows of a JSON lines file; blank lines are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise HumanDataError(f"{path}: cannot be read ({e}); save it as UTF-8 JSON lines") from e
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            problem = f"not JSON ({e.msg})"
            raise bad(
                path, f"row {number}", "line", problem, "write one JSON object per line"
            ) from e
        if not isinstance(row, dict):
            raise bad(
                path, f"row {number}", "line", "is not an object", "write one object per line"
            )
        yield _checked(path, number, row)
