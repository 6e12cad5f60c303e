"""What the readers share: summary-text matching, the one-line error, and loading JSON.

A judgment is attributed to a system either by a key we wrote (Label Studio task ``uid``) or
by matching the summary the annotator saw against each system's summary of that document.
Matching is exact after collapsing whitespace (Label Studio and editors reflow line ends and
trailing spaces; anything else is a different summary). A text that matches no system, or
two, is reported, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.human.judgments import HumanDataError

Candidates = Mapping[str, Mapping[str, str]]
"""System -> {doc_id: summary text}: what a judged summary is matched against."""


def normalize(text: str) -> str:
    """``text`` with every run of whitespace made one space and the ends stripped."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Match:
    """The outcome of attributing one summary text: a system, or why there is none."""

    system: str | None
    why: str = ""
    """Empty when ``system`` is set; else one line (no match, or the systems it matches)."""


def attribute(text: str, doc_id: str, candidates: Candidates) -> Match:
    """The one system whose summary of ``doc_id`` is ``text`` (whitespace-normalized).

    ``candidates`` maps system -> {doc_id: summary}. Two systems with the same summary of
    this document make the text ambiguous: both are named in ``why``, none is chosen.
    """
    wanted = normalize(text)
    hits = [
        system
        for system, summaries in candidates.items()
        if doc_id in summaries and normalize(summaries[doc_id]) == wanted
    ]
    if len(hits) == 1:
        return Match(hits[0])
    if hits:
        return Match(None, f"the summary text matches several systems: {', '.join(hits)}")
    having = [s for s, summaries in candidates.items() if doc_id in summaries]
    if not having:
        return Match(None, f"no candidate system has a summary of {doc_id!r}")
    return Match(None, f"the summary text matches none of {', '.join(having)}")


def contains(summary: str, span: str) -> bool:
    """Whether ``span`` is a stretch of ``summary`` (whitespace-normalized)."""
    return normalize(span) in normalize(summary)


def bad(path: Path | str, where: str, field: str, problem: str, fix: str) -> HumanDataError:
    """The one-line error every reader raises: file, book or task, field, problem, fix."""
    return HumanDataError(f"{path}: {where}, field {field!r}: {problem}; {fix}")


def load_json(path: Path) -> Any:
    """The parsed JSON of ``path``, or a HumanDataError naming the line that breaks it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise HumanDataError(f"{path}: cannot be read ({e.strerror}); check the path") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise HumanDataError(
            f"{path}: not JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
            "pass the .json file the tool exported, unedited"
        ) from e


def expect_dict(value: Any, path: Path, where: str, field: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, else the one-line error for ``field``."""
    if not isinstance(value, dict):
        raise bad(path, where, field, f"is {type(value).__name__}, not an object", "fix the file")
    return value


def expect_str(value: Any, path: Path, where: str, field: str) -> str:
    """``value`` when it is a string, else the one-line error for ``field``."""
    if not isinstance(value, str):
        raise bad(path, where, field, f"is {type(value).__name__}, not a string", "fix the file")
    return value


def check_key(
    key: dict[str, Any] | None, kind: str | None, kinds: tuple[str, ...]
) -> dict[str, Any] | None:
    """The key's ``tasks`` (uid -> entry), after checking its kind against the caller's.

    The key file is what ``runner.annotate export`` writes beside the tasks: ``{"kind",
    "seed", "tasks": {uid: {"doc_id", "systems" | "system" | "source"}}}``.
    """
    if kind is not None and kind not in kinds:
        raise HumanDataError(f"kind={kind!r} is not a task kind; use one of {list(kinds)}")
    if key is None:
        return None
    if key.get("kind") not in kinds or not isinstance(key.get("tasks"), dict):
        raise HumanDataError(
            f"the key has kind={key.get('kind')!r} and no 'tasks' object; "
            "pass the key file `python -m runner.annotate export` wrote beside the tasks"
        )
    if kind is not None and key["kind"] != kind:
        raise HumanDataError(
            f"the key is for {key['kind']} tasks, not {kind}; pass the key of this export"
        )
    tasks: dict[str, Any] = key["tasks"]
    return tasks


def by_key(
    key_tasks: dict[str, Any],
    uid: Any,
    book: str,
    error: Callable[[str, str, str], HumanDataError],
) -> tuple[str, tuple[str, ...]] | str:
    """(doc_id, systems) the key gives task ``uid``, or why it gives none.

    A key naming another document than the task's ``book`` belongs to another export: that
    raises ``error(field, problem, fix)`` rather than attributing anything.
    """
    entry = key_tasks.get(str(uid)) if uid is not None else None
    if not isinstance(entry, dict):
        return f"uid {uid!r} is not in the key"
    doc_id = str(entry.get("doc_id", ""))
    if book and doc_id != book:
        raise error("book", f"the key says uid {uid} is {doc_id!r}", "pass the key of this export")
    named = entry.get("systems") or [entry.get("system") or entry.get("source")]
    if not all(named):
        return f"the key names no system for uid {uid!r}"
    return doc_id, tuple(str(s) for s in named)


def by_text(
    texts: list[str], fields: tuple[str, ...], doc_id: str, candidates: Candidates
) -> tuple[str, tuple[str, ...]] | str:
    """(doc_id, the system of each text) by matching, or why not (never a guess).

    Two texts of one task matching the same system is reported too: a pair must compare two.
    """
    systems = []
    for text, field in zip(texts, fields, strict=True):
        match = attribute(text, doc_id, candidates)
        if match.system is None:
            return f"{field}: {match.why}"
        systems.append(match.system)
    if len(set(systems)) < len(systems):
        return f"both summaries are {systems[0]}'s"
    return doc_id, tuple(systems)
