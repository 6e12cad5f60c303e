"""A rater's outputs made elsewhere, entered as a judged run (``metrics=given``).

``metrics=given metrics.given.path=FILE`` reads per-document values a faithfulness rater
produced outside the runner, so a researcher compares their own rater with others (and with
people) in one meta-evaluation table. No model is called: the values are the file's.

Formats, recognised by their shape (not their extension):

- StorySumm's ``predicted_labels`` JSON, ``{doc_id: {"label": 0|1, "probs": ...,
  "claim_labels": [1, 0, ...], "sentence_labels": [...]}}`` (every key optional, at least
  one present). ``label`` -> ``faithful`` (1 faithful, 0 not; ``null`` undecided: NaN).
  ``claim_labels`` -> ``supported`` (share of 1s) and ``claims`` (count), and a verdict per
  claim; ``sentence_labels`` (MiniCheck's) -> ``sentences_supported`` and ``sentences``.
  ``probs``: a number -> ``probability``, as the file gives it (StorySumm's GPT-4 "just
  question" rater gives a percentage, UniEval and AlignScore a 0..1 score; nothing is
  rescaled); a text (a CoT rater's explanation) -> the rationale of the summary's verdict;
  a list of numbers (one per sentence) -> each sentence verdict's ``probability``. A file
  with no ``label`` at all (UniEval, AlignScore: probabilities only) gives ``probability``
  only, no ``faithful``: the run warns that it has no label and needs a threshold.
- JSONL, one ``{"document": ..., "value": ...}`` per line, or CSV with a header naming the
  columns ``document`` and ``value``: the value under the name ``metrics.given.value``
  (default ``faithful``, then 0 or 1). An optional ``rationale`` column (or key) becomes the
  verdict's rationale; other columns and keys are ignored, so a rater's wider export needs
  no trimming. An empty value (``null``) is undecided: NaN.

A document is found by its id (the data's doc id: StorySumm's key, FABLES' "title --
MODEL"); a document of the job the file lacks is NaN with a note; a file none of whose
documents is in the job is refused in ``reduce`` (the first place that sees the job's
documents), which ends the run FAILED. Bad files are refused in ``setup``, before the run.

The file's content is part of the run's identity: the fingerprint hashes the file a
metric's ``path`` names (``runner/config/fingerprint.py``), and the run's params record the
``rater`` (by default the file's folder and stem, ``gpt-4-0125-preview/cot``) and the file's
SHA-256, so the meta-evaluation labels the rater's row.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from runner.api import (
    ConfigError,
    Document,
    Metric,
    MetricError,
    MetricEstimateInput,
    MetricResult,
    Phase,
    ScoreInput,
    Value,
    Verdict,
    read_csv,
)

ROLES: tuple[str, ...] = ()
PROMPT_DIRS: tuple[str, ...] = ()
"""No prompts: the rater ran elsewhere."""
FILE_PARAMS = ("path",)
"""The rater's file: its content is part of the fingerprint (an edited file is a new run)."""

PREDICTED_KEYS = ("label", "probs", "claim_labels", "sentence_labels")
"""The keys of an entry of StorySumm's predicted_labels files."""
FORMATS = (
    'StorySumm predicted_labels JSON ({doc_id: {"label": 0|1, ...}}), JSONL '
    '({"document": ..., "value": ...} per line) or CSV (header document,value)'
)
ORDER = ("faithful", "probability", "supported", "claims", "sentences_supported", "sentences")
"""The predicted_labels values, in the order a reader wants them."""
VALUES = {
    "faithful": Value(title="Faithful (share)", range=(0, 1), better="higher", kind="label"),
    "probability": Value(title="P(faithful)", range=(0, 1), better="higher"),
    "supported": Value(title="Claims supported (share)", range=(0, 1), better="higher"),
    "claims": Value(title="Claims", kind="count"),
    "sentences_supported": Value(
        title="Sentences supported (share)", range=(0, 1), better="higher"
    ),
    "sentences": Value(title="Sentences", kind="count"),
}
"""A predicted_labels file's values; a JSONL or CSV file's own value names are undeclared."""


@dataclass(frozen=True)
class Entry:
    """What the file says about one document."""

    values: dict[str, float]
    rationale: str = ""
    claims: tuple[bool, ...] = ()
    sentences: tuple[bool, ...] = ()
    sentence_probs: tuple[float, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GivenFile:
    """A parsed file: its entries and the value names it gives."""

    entries: dict[str, Entry]
    names: tuple[str, ...]
    """Every value name some entry gives (each document gets all, NaN where unknown)."""
    labelled: bool = True
    """False for a predicted_labels file without any ``label`` (probabilities only)."""
    notes: tuple[str, ...] = field(default=())


class Given(Metric):
    """Looks each document up in the rater's file."""

    def __init__(self, path: Path, rater: str, given: GivenFile) -> None:
        """The headline is what the file gives (a probabilities-only file has no faithful)."""
        self.path = path
        self.rater = rater
        self.given = given
        self.headline = tuple(n for n in given.names if n not in ("claims", "sentences"))
        self.read_back = tuple(n for n in given.names if n not in self.headline)
        self.run_params = {"rater": rater, "sha256": _sha256(path)}

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """The file's values for ``document`` (its id; no given claims)."""
        doc_id = document.doc_id if document is not None else ""
        return self.score_input(ScoreInput(document, summary, doc_id))

    def score_input(self, item: ScoreInput) -> MetricResult:
        """The file's values for this document (NaN with a note when it has none).

        Looked up by the document's id: the summaries it rates come without their sources.
        """
        key, extras = item.doc_id, item.extras
        nan = {name: math.nan for name in self.given.names}
        entry = self.given.entries.get(key) if key is not None else None
        if entry is None:
            note = f"given: {self.path.name} has no entry for document {key!r}: NaN"
            return MetricResult(values=nan, notes=(note,))
        texts = tuple(str(c) for c in extras.get("claims", ()))
        artifacts: dict[str, Any] = {
            "given.json": {
                "rater": self.rater,
                "faithful": _bool(entry.values.get("faithful")),
                "rationale": entry.rationale,
                "sentences": [
                    {"index": i, "supported": s, "probability": _at(entry.sentence_probs, i)}
                    for i, s in enumerate(entry.sentences)
                ],
            }
        }
        notes = list(entry.notes)
        if "faithful" in self.given.names and "faithful" not in entry.values:
            notes.append(f"given: {self.path.name} gives no label for {key!r}: faithful is NaN")
        if entry.claims:
            artifacts["claims.json"] = [
                {
                    "index": i,
                    "claim": texts[i] if i < len(texts) else "",
                    "supported": supported,
                    "answer": "",
                    "passages": [],
                }
                for i, supported in enumerate(entry.claims)
            ]
            if texts and len(texts) != len(entry.claims):
                notes.append(
                    f"given: {len(entry.claims)} claim labels but the data gives "
                    f"{len(texts)} claims for {key!r}: labels matched to claims by position"
                )
        return MetricResult(values={**nan, **entry.values}, artifacts=artifacts, notes=tuple(notes))

    def reduce(self, per_document: Mapping[str, MetricResult]) -> dict[str, float]:
        """The mean of each value; a file that matches none of the job's documents is refused."""
        if per_document and not any(doc in self.given.entries for doc in per_document):
            raise MetricError(
                f"metrics.given.path={self.path}: none of its {len(self.given.entries)} "
                f"documents ({_some(self.given.entries)}) is a document of this job "
                f"({_some(per_document)}); give the rater's file for these summaries, keyed "
                "by the data's doc ids"
            )
        return super().reduce(per_document)

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """Documents the file lacks, and a file without labels."""
        found = list(self.given.notes)
        missing = [doc for doc in per_document if doc not in self.given.entries]
        if missing:
            found.append(
                f"given: {len(missing)} of {len(per_document)} documents have no entry in "
                f"{self.path.name} ({_some(missing)}): NaN"
            )
            unknown = [doc for doc in self.given.entries if doc not in per_document]
            if unknown:  # a misspelt id is both: a document without entry, an entry without one
                found.append(
                    f"given: {len(unknown)} of {self.path.name}'s {len(self.given.entries)} "
                    f"documents are not documents of this job ({_some(unknown)}); check their "
                    "spelling against the data's doc ids"
                )
        return found

    def verdicts(self, result: MetricResult) -> list[Verdict]:
        """The rater's label on the summary, and its label on each claim and sentence."""
        given = result.artifacts.get("given.json")
        if not isinstance(given, dict):
            return []
        out = []
        if given["faithful"] is not None:
            out.append(self._verdict("given/faithful", given["faithful"], given["rationale"], {}))
        for claim in result.artifacts.get("claims.json", []):
            meta = {"claim": claim["claim"], "index": str(claim["index"])}
            out.append(self._verdict("given/claim", claim["supported"], "", meta))
        for sentence in given["sentences"]:
            meta = {"index": str(sentence["index"])}
            if sentence["probability"] is not None:
                meta["probability"] = str(sentence["probability"])
            out.append(self._verdict("given/sentence", sentence["supported"], "", meta))
        return out

    def _verdict(self, name: str, value: bool, rationale: str, meta: dict[str, str]) -> Verdict:
        return Verdict(name, value, rationale, metadata=meta, role="", source=self.rater)


def setup(*, path: str | None = None, rater: str | None = None, value: str = "faithful") -> Given:
    """Read and check the file once, before the run exists (a bad file is one line)."""
    if not path:
        raise ConfigError(
            "metrics.given.path is not set; give the rater's file: metrics.given.path=FILE"
        )
    file = Path(str(path)).expanduser()
    if not file.is_file():
        raise ConfigError(f"metrics.given.path={path} does not exist; give an existing file")
    if not value or not str(value).replace("_", "").isalnum():
        raise ConfigError(
            f"metrics.given.value={value!r} is not a value name; give a word such as faithful"
        )
    given = read(file, str(value))
    return Given(file, rater or default_rater(file), given)


def estimate(inputs: MetricEstimateInput) -> list[Phase]:
    """No model calls: the values are read from the file."""
    return []


def default_rater(path: Path) -> str:
    """The file's folder and stem (``gpt-4-0125-preview/cot``), the rater's name in a row."""
    return f"{path.parent.name}/{path.stem}" if path.parent.name else path.stem


def read(path: Path, value: str = "faithful") -> GivenFile:
    """The file's entries, whichever of the three formats it is (``FORMATS``)."""
    where = f"metrics.given.path={path}"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{where} cannot be read as UTF-8 text ({err}); give {FORMATS}") from err
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if _predicted_shape(whole):
        return read_predicted(whole, where, path.name)
    rows = _jsonl_rows(text) or _csv_rows(text)
    if rows is None:
        raise ConfigError(f"{where} is none of the formats metrics=given reads; give {FORMATS}")
    return read_table(rows, value, where)


def _predicted_shape(data: object) -> bool:
    return (
        isinstance(data, dict)
        and bool(data)
        and all(isinstance(v, dict) and any(k in v for k in PREDICTED_KEYS) for v in data.values())
    )


def read_predicted(data: dict[str, dict[str, Any]], where: str, name: str) -> GivenFile:
    """StorySumm's predicted_labels: label, probs, claim_labels, sentence_labels."""
    entries = {str(doc): _predicted_entry(str(doc), raw, where) for doc, raw in data.items()}
    given = {name for e in entries.values() for name in e.values}
    labelled = any("label" in raw for raw in data.values())
    notes: tuple[str, ...] = ()
    if labelled:
        given.add("faithful")
    else:
        notes = (
            f"given: {name} has no label, only probabilities: "
            "no faithful value (a threshold on probability decides one)",
        )
    names = tuple(n for n in ORDER if n in given)
    return GivenFile(entries, names, labelled, notes)


def _predicted_entry(doc: str, raw: dict[str, Any], where: str) -> Entry:
    values: dict[str, float] = {}
    notes: list[str] = []
    if "label" in raw:
        if raw["label"] is None:
            values["faithful"] = math.nan
            notes.append(f"given: no label for {doc!r} (null): faithful is NaN")
        else:
            values["faithful"] = _zero_one(raw["label"], f"{where}: document {doc!r} has label")
    claims = _labels(raw.get("claim_labels"), f"{where}: document {doc!r} has claim_labels")
    if "claim_labels" in raw:
        values["supported"] = _share(claims)
        values["claims"] = float(len(claims))
    sentences = _labels(
        raw.get("sentence_labels"), f"{where}: document {doc!r} has sentence_labels"
    )
    if "sentence_labels" in raw:
        values["sentences_supported"] = _share(sentences)
        values["sentences"] = float(len(sentences))
    probs = raw.get("probs")
    rationale = ""
    sentence_probs: tuple[float, ...] = ()
    if isinstance(probs, str):
        rationale = probs
    elif _is_number(probs):
        values["probability"] = float(probs)
    elif isinstance(probs, list) and all(_is_number(p) for p in probs):
        sentence_probs = tuple(float(p) for p in probs)
    elif probs is not None:
        raise ConfigError(
            f"{where}: document {doc!r} has probs {_shown(probs)}, not a number, a text or a "
            "list of numbers; fix the file"
        )
    return Entry(values, rationale, claims, sentences, sentence_probs, tuple(notes))


def _jsonl_rows(text: str) -> list[dict[str, Any]] | None:
    """Each line's object when every non-empty line is one with ``document`` and ``value``."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(row, dict) or "document" not in row or "value" not in row:
            return None
        rows.append(row)
    return rows or None


def _csv_rows(text: str) -> list[dict[str, Any]] | None:
    """The rows of a CSV whose header names ``document`` and ``value`` (``read_csv``)."""
    try:
        header, rows = read_csv(text)
    except csv.Error:
        return None
    if "document" not in header or "value" not in header:
        return None
    return [{**row, "value": row.get("value") or None} for _, row in rows]


def read_table(rows: list[dict[str, Any]], value: str, where: str) -> GivenFile:
    """JSONL or CSV rows: ``document``, ``value`` and an optional ``rationale``."""
    entries: dict[str, Entry] = {}
    for row in rows:
        doc = str(row["document"]).strip()
        if doc in entries:
            raise ConfigError(
                f"{where}: document {doc!r} appears twice; keep one value per document"
            )
        number = _table_value(row["value"], value, f"{where}: document {doc!r} has {value}")
        notes = (f"given: no {value} for {doc!r} (empty): NaN",) if math.isnan(number) else ()
        rationale = row.get("rationale")
        entries[doc] = Entry({value: number}, str(rationale or ""), notes=notes)
    return GivenFile(entries, (value,))


def _table_value(raw: object, value: str, what: str) -> float:
    if raw is None:
        return math.nan
    if value == "faithful":
        if isinstance(raw, bool):
            return float(raw)
        return _zero_one(_number_of(raw, what), what)
    return _number_of(raw, what)


def _number_of(raw: object, what: str) -> float:
    if _is_number(raw):
        return float(raw)
    try:
        return float(str(raw).strip())
    except ValueError:
        raise ConfigError(f"{what} {_shown(raw)}, not a number; fix the file") from None


def _zero_one(raw: object, what: str) -> float:
    if _is_number(raw) and float(raw) in (0.0, 1.0):
        return float(raw)
    raise ConfigError(f"{what} {_shown(raw)}, not 0 or 1 (1 = faithful); fix the file")


def _labels(raw: object, what: str) -> tuple[bool, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"{what} {_shown(raw)}, not a list of 0 or 1; fix the file")
    return tuple(_zero_one(x, what) == 1.0 for x in raw)


def _is_number(raw: object) -> TypeGuard[int | float]:
    return isinstance(raw, (int, float)) and not isinstance(raw, bool)


def _share(labels: tuple[bool, ...]) -> float:
    return sum(labels) / len(labels) if labels else math.nan


def _bool(value: float | None) -> bool | None:
    return None if value is None or math.isnan(value) else value == 1.0


def _at(values: tuple[float, ...], index: int) -> float | None:
    return values[index] if index < len(values) else None


def _shown(raw: object) -> str:
    text = json.dumps(raw) if not isinstance(raw, str) else repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


def _some(keys: Any) -> str:
    """The first three keys, for a message."""
    listed = [str(k) for k in list(keys)[:3]]
    return ", ".join(listed) + (", ..." if len(keys) > 3 else "")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
