"""Read the BooookScore authors' released human judgments (the built-in span format's).

Three shapes (see ../shared/data/README.md, ``booookscore/human/``):

- coherence annotations ``{book: {"summary", "singles": [{"id", "span", "questions",
  "labels"}], "relations": [{"id_a", "id_b", "span_a", "span_b", "shared_questions",
  "same", "shared_labels"}]}}``: one annotation per book; which system wrote the summaries
  and who annotated them is not in the file, so the caller says (``system="hier"``);
- the Appendix J validation sample ``{book: {"summary", "annotations": [{"source", "anno",
  "agreement", "reasons", "explanation"}]}}``: one Verdict per annotation judged;
- plain summaries ``{book: summary}`` (or the annotation files' ``summary`` fields), the
  candidates that Label Studio exports without a key are attributed against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.human.attribute import bad, contains, expect_dict, expect_str, load_json
from runner.human.judgments import (
    VERDICTS,
    CoherenceAnnotation,
    Relation,
    Span,
    Verdict,
)
from runner.human.owner import owner


def read_author_annotations(path: Path, system: str, annotator: str) -> list[CoherenceAnnotation]:
    """One CoherenceAnnotation per book of an authors' annotation file, in file order.

    Every span must be a stretch of its summary and every label one of the built-in span
    format's labels (``runner.human.owner``: BooookScore's error types), so a file edited by
    hand fails here rather than skewing a score.
    """
    books = _books(path)
    out = []
    for book, raw in books.items():
        where = f"book {book!r}"
        entry = expect_dict(raw, path, where, "book")
        summary = expect_str(entry.get("summary"), path, where, "summary")
        singles = tuple(
            _span(path, where, summary, expect_dict(s, path, where, "singles"), "span")
            for s in _list(path, where, entry, "singles")
        )
        relations = tuple(
            _relation(path, where, summary, expect_dict(r, path, where, "relations"))
            for r in _list(path, where, entry, "relations")
        )
        out.append(CoherenceAnnotation(book, system, annotator, summary, singles, relations))
    return out


def read_validation_sample(path: Path, annotator: str = "") -> list[Verdict]:
    """One Verdict per annotation of the Appendix J sample, its source as given.

    The validators are not named in the file; ``annotator`` says who they were if known.
    """
    out = []
    for book, raw in _books(path).items():
        where = f"book {book!r}"
        entry = expect_dict(raw, path, where, "book")
        for item in _list(path, where, entry, "annotations"):
            judged = expect_dict(item, path, where, "annotations")
            source = expect_str(judged.get("source"), path, where, "source")
            verdict = judged.get("agreement")
            if verdict not in VERDICTS:
                problem = f"{verdict!r} is not a verdict"
                raise bad(path, where, "agreement", problem, f"use one of {VERDICTS}")
            anno = expect_dict(judged.get("anno"), path, where, "anno")
            reasons = [str(r) for r in judged.get("reasons") or []]
            if judged.get("explanation"):
                reasons.append(str(judged["explanation"]))
            out.append(Verdict(book, source, anno, verdict, annotator, "; ".join(reasons)))
    return out


def read_summaries(path: Path) -> dict[str, str]:
    """{book: summary} from a ``{book: summary}`` file or an annotation file's ``summary``."""
    out = {}
    for book, raw in _books(path).items():
        value = raw.get("summary") if isinstance(raw, dict) else raw
        out[book] = expect_str(value, path, f"book {book!r}", "summary")
    return out


def _books(path: Path) -> dict[str, Any]:
    """The file's top-level ``{book: ...}`` object."""
    books = load_json(path)
    if not isinstance(books, dict) or not books:
        problem = "is not a non-empty {book: ...} object"
        raise bad(path, "top level", "book", problem, "pass the authors' file")
    return books


def _list(path: Path, where: str, entry: dict[str, Any], field: str) -> list[Any]:
    """``entry[field]`` as a list (absent: empty)."""
    value = entry.get(field, [])
    if not isinstance(value, list):
        raise bad(path, where, field, f"is {type(value).__name__}, not a list", "fix the file")
    return value


def _labels(path: Path, where: str, raw: Any, field: str) -> tuple[str, ...]:
    """Error types, each one of the format's labels."""
    labels = tuple(str(label) for label in raw or ())
    known = owner("")[1].labels
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise bad(path, where, field, f"unknown error type {unknown}", f"use {known}")
    return labels


def _span(path: Path, where: str, summary: str, raw: dict[str, Any], field: str) -> Span:
    """A single span (``span``, ``questions``, ``labels``), checked against the summary."""
    text = _in_summary(path, where, summary, raw.get(field), field)
    labels = _labels(path, where, raw.get("labels"), "labels")
    return Span(text, str(raw.get("questions") or ""), labels)


def _relation(path: Path, where: str, summary: str, raw: dict[str, Any]) -> Relation:
    """A relation: two spans with shared questions and labels."""
    first = _in_summary(path, where, summary, raw.get("span_a"), "span_a")
    second = _in_summary(path, where, summary, raw.get("span_b"), "span_b")
    labels = _labels(path, where, raw.get("shared_labels"), "shared_labels")
    return Relation(Span(first), Span(second), str(raw.get("shared_questions") or ""), labels)


def _in_summary(path: Path, where: str, summary: str, value: Any, field: str) -> str:
    """``value`` when it is a string found in the summary."""
    text = expect_str(value, path, where, field)
    if not contains(summary, text):
        raise bad(path, where, field, f"{text[:60]!r} is not in the summary", "fix the span")
    return text
