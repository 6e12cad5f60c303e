"""StorySumm's and FABLES' releases as published, read into plain frozen values.

Both are MIT-licensed releases of people's faithfulness labels (StorySumm: Subbiah et al.
2024, ``storysumm.json``; FABLES: Kim et al. 2024, ``FABLES.json.zip``). The data loaders
(``data.py``) and the human-judgment readers (``human.py``) both start here, so the two
read the same summaries, claims and labels.

StorySumm's ``storysumm.json`` does not parse as published: one summary sentence ends with
a stray ``", "`` before its line break. That one pattern is repaired, where the parser
stops on it, and reported as a note; any other broken JSON is an error naming its line,
so a file broken differently is never "repaired" into something else.
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.api import DataError

FABLES_LABELS: tuple[str, ...] = ("Yes", "No", "PartialSupport", "Inapplicable")
"""The labels FABLES' annotators give a claim."""
FABLES_TO_CLAIM_LABEL: dict[str, str] = {
    "Yes": "supported",
    "PartialSupport": "partial",
    "No": "unsupported",
    "Inapplicable": "cannot_tell",
}
"""FABLES' claim label -> the plugin API's ``CLAIM_LABELS`` value."""
STORYSUMM_FIELDS = (
    "story",
    "summary",
    "label",
    "difficulty",
    "errors",
    "explanations",
    "claims",
    "model",
    "split",
    "story-id",
)
"""The fields of one StorySumm summary."""
FABLES_FIELDS = ("summary", "claims")
FABLES_CLAIM_FIELDS = ("claim", "label", "evidence", "reason")
_STRAY = re.compile(r'^\s*"(?:[^"\\]|\\.)*", "$')
"""A line that is one JSON string alone (an array's element, no ``key:``) followed by the
release's stray ``", "``."""


@dataclass(frozen=True)
class StorySummEntry:
    """One StorySumm summary of one story, with its people's labels."""

    key: str
    story: str
    sentences: tuple[str, ...]
    label: int
    """1 faithful, 0 not (the release's final label)."""
    difficulty: str
    """``easy`` or ``hard`` for an unfaithful summary; '' for a faithful one."""
    errors: tuple[int, ...]
    """Per sentence: 1 consistent with the story, 0 not."""
    explanations: tuple[str, ...]
    """One per inconsistent sentence, in order."""
    claims: tuple[str, ...]
    """The release's atomic claims (GPT-4 extracted), in order."""
    model: str
    """The summarizer."""
    split: str
    """``val`` or ``test``."""
    story_id: str

    @property
    def summary(self) -> str:
        """The summary as the release's raters read it: its sentences joined by spaces."""
        return " ".join(self.sentences)


@dataclass(frozen=True)
class FablesClaim:
    """One claim of a FABLES summary with its annotator's label."""

    claim: str
    label: str
    """One of ``FABLES_LABELS``."""
    evidence: tuple[str, ...]
    """Quotes of the book the annotator cites."""
    reason: tuple[str, ...]
    """The annotator's reasons, as released (often empty strings)."""


@dataclass(frozen=True)
class FablesSummary:
    """One FABLES summary of one book by one summarizer, with its claims."""

    title: str
    model: str
    summary: str
    comment: str
    """The annotator's general comment on the summary."""
    claims: tuple[FablesClaim, ...]

    @property
    def doc_id(self) -> str:
        """The summary's document id: ``<title> -- <MODEL>``."""
        return f"{self.title} -- {self.model}"


def read_storysumm(
    path: Path, error: type[DataError] = DataError
) -> tuple[list[StorySummEntry], list[str]]:
    """The release's summaries in file order, and a note per repaired line.

    ``error``: the class raised for a file that cannot be read (``HumanDataError`` when
    reading people's judgments), one line naming the file and what is wrong.
    """
    text = _read_text(path, error)
    data, notes = parse_storysumm_json(text, path.name, error)
    if not isinstance(data, dict) or not data:
        raise error(f"{path}: not a StorySumm release (expected a JSON object of summaries by id)")
    return [_storysumm_entry(path, str(k), v, error) for k, v in data.items()], notes


def parse_storysumm_json(
    text: str, name: str, error: type[DataError] = DataError
) -> tuple[Any, list[str]]:
    """``text`` parsed as JSON, the release's stray ``", "`` repaired where parsing stops.

    Only a line that is a string element ending in ``", "`` is repaired (its stray `` "``
    dropped), and only where the parser fails on it; any other error is ``error``.
    """
    notes: list[str] = []
    repaired: set[int] = set()
    while True:
        try:
            return json.loads(text), notes
        except json.JSONDecodeError as err:
            lines = text.split("\n")
            line = lines[err.lineno - 1] if err.lineno <= len(lines) else ""
            if err.lineno in repaired or not _STRAY.match(line):
                raise error(
                    f"{name}: not valid JSON at line {err.lineno} column {err.colno} "
                    f"({err.msg}); fix that line or download the release again"
                ) from None
            lines[err.lineno - 1] = line[: -len(' "')]
            text = "\n".join(lines)
            repaired.add(err.lineno)
            notes.append(
                f"{name} line {err.lineno}: removed a stray '\", \"' before the line break "
                "(the release's typo)"
            )


def _read_text(path: Path, error: type[DataError]) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path} does not exist; give the path of the release's file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(
            f"{path}: cannot be read as UTF-8 text ({err}); give the release's file"
        ) from None


def _storysumm_entry(path: Path, key: str, raw: Any, error: type[DataError]) -> StorySummEntry:
    if not isinstance(raw, dict):
        raise error(f"{path}: summary {key} is not an object; expected the StorySumm release")
    missing = [f for f in STORYSUMM_FIELDS if f not in raw]
    if missing:
        raise error(
            f"{path}: summary {key} has no field {missing[0]!r}; "
            f"a StorySumm summary has {', '.join(STORYSUMM_FIELDS)}"
        )
    lists = ("summary", "errors", "explanations", "claims")
    listed = [f for f in lists if not isinstance(raw[f], list)]
    if listed:
        raise error(f"{path}: summary {key}: {listed[0]!r} must be a list (as the release has it)")
    if raw["label"] not in (0, 1) or any(e not in (0, 1) for e in raw["errors"]):
        raise error(f"{path}: summary {key}: label and errors must be 0 or 1")
    return StorySummEntry(
        key=key,
        story=str(raw["story"]),
        sentences=tuple(str(s) for s in raw["summary"]),
        label=int(raw["label"]),
        difficulty=str(raw["difficulty"] or ""),
        errors=tuple(int(e) for e in raw["errors"]),
        explanations=tuple(str(x) for x in raw["explanations"]),
        claims=tuple(str(c) for c in raw["claims"]),
        model=str(raw["model"]),
        split=str(raw["split"]),
        story_id=str(raw["story-id"]),
    )


def read_fables(path: Path, error: type[DataError] = DataError) -> list[FablesSummary]:
    """The release's summaries, book by book in file order, each one's claims in index order.

    ``path``: the release's ``FABLES.json.zip`` (its ``FABLES.json``; the ``__MACOSX`` copy
    is ignored) or ``FABLES.json`` itself. The ``canary`` key is skipped.
    """
    books = fables_json(path, error)
    return [
        _fables_summary(path, str(title), str(model), raw, error)
        for title, models in books.items()
        for model, raw in _object(path, models, f"book {title!r}", error).items()
    ]


def fables_json(path: Path, error: type[DataError] = DataError) -> dict[str, Any]:
    """The release's ``FABLES`` object (title -> model -> summary), from the zip or the JSON."""
    expected = (
        "expected the FABLES release: FABLES.json.zip (holding FABLES.json) or FABLES.json "
        '({"FABLES": {title: {MODEL: {summary, claims}}}})'
    )
    if not path.exists():
        raise error(f"{path} does not exist; {expected}")
    if zipfile.is_zipfile(path):
        raw = _json_in_zip(path, error, expected)
    else:
        try:
            raw = json.loads(path.read_bytes())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise error(f"{path} is neither a zip nor JSON; {expected}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("FABLES"), dict):
        raise error(f"{path} has no FABLES object; {expected}")
    books: dict[str, Any] = raw["FABLES"]
    return books


def _json_in_zip(path: Path, error: type[DataError], expected: str) -> Any:
    with zipfile.ZipFile(path) as archive:
        names = [
            n
            for n in archive.namelist()
            if n.rsplit("/", 1)[-1] == "FABLES.json" and not n.startswith("__MACOSX/")
        ]
        if not names:
            raise error(f"{path}: the zip holds no FABLES.json; {expected}")
        try:
            return json.loads(archive.read(names[0]))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise error(f"{path}: its FABLES.json is not valid JSON ({err}); {expected}") from None


def _object(path: Path, raw: Any, what: str, error: type[DataError]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise error(f"{path}: {what} is not an object; expected the FABLES release's layout")
    return raw


def _fables_summary(
    path: Path, title: str, model: str, raw: Any, error: type[DataError]
) -> FablesSummary:
    where = f"{title!r} by {model}"
    raw = _object(path, raw, where, error)
    missing = [f for f in FABLES_FIELDS if f not in raw]
    if missing:
        raise error(
            f"{path}: {where} has no field {missing[0]!r}; a summary has summary and claims"
        )
    claims = _object(path, raw["claims"], f"the claims of {where}", error)
    try:
        order = sorted(claims, key=int)
    except ValueError:
        raise error(f"{path}: {where} has a claim index that is not a number") from None
    return FablesSummary(
        title=title,
        model=model,
        summary=str(raw["summary"]),
        comment=str(raw.get("general_comment") or ""),
        claims=tuple(_fables_claim(path, where, i, claims[i], error) for i in order),
    )


def _fables_claim(
    path: Path, where: str, index: str, raw: Any, error: type[DataError]
) -> FablesClaim:
    claim = _object(path, raw, f"claim {index} of {where}", error)
    missing = [f for f in FABLES_CLAIM_FIELDS if f not in claim]
    if missing:
        raise error(
            f"{path}: claim {index} of {where} has no field {missing[0]!r}; "
            f"a claim has {', '.join(FABLES_CLAIM_FIELDS)}"
        )
    if claim["label"] not in FABLES_LABELS:
        raise error(
            f"{path}: claim {index} of {where} has label {claim['label']!r}; "
            f"a FABLES label is one of {', '.join(FABLES_LABELS)}"
        )
    return FablesClaim(
        claim=str(claim["claim"]),
        label=str(claim["label"]),
        evidence=tuple(str(e) for e in _listed(claim["evidence"])),
        reason=tuple(str(r) for r in _listed(claim["reason"])),
    )


def _listed(value: Any) -> list[Any]:
    """A field released as a list (a lone string or null read as one or none)."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
