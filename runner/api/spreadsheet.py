"""A CSV file as people save it: the one reader of every command that takes a table.

A spreadsheet saves a UTF-8 CSV with a byte-order mark, CRLF line ends and, in many
locales, ``;`` between cells (Excel's "CSV UTF-8" in a German or French locale). Every
command reads these the same way, so a file that one command reads is never refused by
another: the mark is dropped, any line end is taken, and the separator is the one of ``,``,
``;`` and tab that the header line holds most often (a comma when it holds none). Header
names and cells are trimmed of surrounding spaces.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

SEPARATORS = (",", ";", "\t")
"""The separators a header line is read for, a comma first (it wins a tie)."""

Row = tuple[int, dict[str, str | None]]
"""A row's line number (as an editor shows it) and its cells by column name."""


def read_text(path: Path) -> str:
    """The file as text, without a UTF-8 byte-order mark (``OSError``, ``UnicodeDecodeError``)."""
    return path.read_text(encoding="utf-8-sig")


def separator(text: str) -> str:
    """The separator of the header line: the one of ``SEPARATORS`` it holds most often."""
    header = text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""
    counts = {sep: header.count(sep) for sep in SEPARATORS}
    best = max(SEPARATORS, key=lambda sep: counts[sep])
    return best if counts[best] else ","


def header_and_rows(text: str) -> tuple[list[str], list[Row]]:
    """The trimmed header and every row after it (``csv.Error`` for a malformed file).

    A cell the row lacks is None; an empty line is no row.
    """
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), delimiter=separator(text))
    header: list[str] = []
    rows: list[Row] = []
    for cells in reader:
        if not header:
            header = [c.strip() for c in cells]
            continue
        if not any(c.strip() for c in cells):
            continue
        row: dict[str, str | None] = {
            name: (cells[i].strip() if i < len(cells) else None) for i, name in enumerate(header)
        }
        rows.append((reader.line_num, row))
    return header, rows
