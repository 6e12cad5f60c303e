"""Reading the judge's answers for BooookScore, tolerantly but never by guessing.

Per-sentence answers come in the paper's form (Appendix M.4)::

    Questions: Where or what is Prospera?
    Types: entity omission

Rules, in order (an answer that breaks one is *unparsed*: the caller asks again, then
records it as unparsed, so it is never silently scored as confused or clean):

1. Markdown emphasis, list bullets and numbering, and text before or after the two fields
   are ignored; field names match in any case ("Types:", "TYPE:", "Types of confusion:").
   The first ``Types:`` field wins (small models sometimes go on to invent more examples).
   A field may hold its value on the same line or as a list on the following lines.
2. "no confusion" (any case, any punctuation) means no error. A bare "No confusion." or a
   ``Questions: no confusion`` with no Types field is accepted as the same answer.
3. Otherwise every type must be one of the eight labels, after lowercasing and turning
   hyphens/underscores into spaces and dropping parenthesized remarks; one unknown type
   makes the answer unparsed. Duplicated labels are kept once, in order.
4. Contradictions are unparsed: types naming labels while questions say "no confusion",
   "no confusion" mixed with labels, or questions asked under "Types: no confusion".

Batched answers are a JSON list of ``{"sentence_num", "sentence", "questions", "types"}``
(see :func:`parse_batch_answer`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

LABELS: tuple[str, ...] = (
    "entity omission",
    "event omission",
    "causal omission",
    "salience",
    "discontinuity",
    "duplication",
    "inconsistency",
    "language",
)
"""The eight error types of the paper's taxonomy, in its order."""

_NO_CONFUSION = re.compile(r"\bno[\s_-]*confusion\b", re.IGNORECASE)
_FIELD = re.compile(
    r"^[\s>*_#`-]*(?:\d+[.)]\s*)?[*_`]*"
    r"(?P<name>questions?|(?:confusion\s+)?types?(?:\s+of\s+confusion)?)"
    r"[*_`]*\s*[:：][*_`]*\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_EMPTY = frozenset({"", "none", "n a", "na", "null", "nothing"})
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d+[.)])\s*")
_LIST_LINE = re.compile(r"^\s*(?:[-*•·]|\d+[.)])\s+\S")


@dataclass(frozen=True)
class Verdict:
    """The judge's reading of one sentence."""

    parsed: bool
    """False when no usable answer was obtained; such a sentence is left out of the score."""
    questions: str | None = None
    """The clarifying questions; None for no confusion (and for unparsed answers)."""
    types: tuple[str, ...] | None = None
    """Error types from ``LABELS``; None for no confusion (and for unparsed answers)."""
    error: str = ""
    """Why the answer could not be read ('' when parsed)."""
    answer: str = ""
    """The last raw answer, kept for the artifact."""

    @property
    def confused(self) -> bool:
        """True when the sentence was judged to contain at least one error."""
        return self.parsed and self.types is not None


def no_confusion(answer: str = "") -> Verdict:
    """A parsed verdict of no error."""
    return Verdict(parsed=True, answer=answer)


def unparsed(error: str, answer: str = "") -> Verdict:
    """A verdict that could not be read."""
    return Verdict(parsed=False, error=error, answer=answer)


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("**", "").replace("__", "").replace("`", "")).strip()


def _field_values(lines: list[str], start: int, rest: str) -> str:
    """A field's value: the rest of its line, or else the following lines up to a blank one."""
    if rest.strip():
        return rest
    values = []
    for line in lines[start + 1 :]:
        if not line.strip() or _FIELD.match(line) or line.lstrip().startswith("["):
            break
        values.append(line)
    return "\n".join(values)


def _fields(text: str) -> tuple[str | None, str | None]:
    """(questions, types) raw values, each None when its field is absent."""
    lines = text.splitlines()
    questions: str | None = None
    types: str | None = None
    for index, line in enumerate(lines):
        match = _FIELD.match(line)
        if not match:
            continue
        value = _field_values(lines, index, match.group("rest"))
        if match.group("name").lower().startswith("question"):
            if questions is None and types is None:
                questions = value
        else:
            types = value
            break
    return questions, types


def normalize_label(item: str) -> str:
    """'Entity-Omission.' -> 'entity omission'; unknown text is returned normalized too."""
    item = re.sub(r"\([^)]*\)", " ", item)
    item = _BULLET.sub("", item).lower().replace("-", " ").replace("_", " ")
    item = re.sub(r"[^a-z ]", " ", item)
    return re.sub(r"\s+", " ", item).strip()


def parse_types(value: str) -> tuple[tuple[str, ...] | None, str]:
    """(labels, '') or (None, reason) for a Types value that is not 'no confusion'."""
    items = [normalize_label(p) for p in re.split(r"[,;/|\n]|\band\b|&", value)]
    items = [i for i in items if i]
    if not items:
        return None, "empty Types field"
    unknown = [i for i in items if i not in LABELS]
    if unknown:
        return None, f"unknown type {unknown[0]!r}"
    return tuple(dict.fromkeys(items)), ""


def _blank(value: str | None) -> bool:
    """True for an absent or empty field, or one saying only 'none', 'n/a', 'null'."""
    return value is None or normalize_label(value) in _EMPTY


def _says_no_confusion(value: str | None) -> bool:
    return value is not None and bool(_NO_CONFUSION.search(value))


def _only_no_confusion(value: str) -> bool:
    """True when the text is 'no confusion' and nothing else but punctuation or quotes."""
    return normalize_label(_NO_CONFUSION.sub(" ", value)) == ""


def _opens_with_no_confusion(text: str) -> bool:
    """'No confusion.' or 'No confusion; the sentence is clear.' (and names no label)."""
    cleaned = _clean(text).lower()
    return bool(re.match(r"^\W*no\s+confusion\b", cleaned)) and not any(
        label in normalize_label(cleaned) for label in LABELS
    )


def parse_answer(text: str) -> Verdict:
    """The verdict in a per-sentence answer (rules in the module docstring)."""
    if not text or not text.strip():
        return unparsed("empty answer", text)
    questions, types = _fields(text)
    if types is None:
        if (
            questions is not None
            and _says_no_confusion(questions)
            and _only_no_confusion(questions)
        ):
            return no_confusion(text)
        if questions is None and _opens_with_no_confusion(text):
            return no_confusion(text)
        return unparsed("no 'Types:' field", text)
    if _says_no_confusion(types):
        if not _only_no_confusion(types):
            return unparsed("'no confusion' mixed with types", text)
        if not _blank(questions) and not _only_no_confusion(questions or ""):
            return unparsed("questions asked but types say 'no confusion'", text)
        return no_confusion(text)
    labels, error = parse_types(types)
    if labels is None:
        return unparsed(error, text)
    asked = _clean(questions or "")
    if _says_no_confusion(asked) and _only_no_confusion(asked):
        return unparsed("types given but questions say 'no confusion'", text)
    return Verdict(parsed=True, questions=asked, types=labels, answer=text)


# ---------------------------------------------------------------- batched answers


def _json_list(text: str) -> list[Any] | None:
    """The JSON list in ``text`` (code fences, prose and trailing commas tolerated)."""
    start, end = text.find("["), text.rfind("]")
    candidates = []
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    brace_start, brace_end = text.find("{"), text.rfind("}")
    if brace_start != -1 and brace_end > brace_start:
        candidates.append("[" + text[brace_start : brace_end + 1] + "]")
    for blob in candidates:
        for attempt in (blob, re.sub(r",\s*([\]}])", r"\1", blob)):
            try:
                data = json.loads(attempt)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                data = [data]
            if isinstance(data, list):
                return data
    return None


def _same_sentence(a: str, b: str) -> bool:
    """Equal up to case, spacing, quotes and punctuation (models retype sentences)."""

    def key(s: str) -> str:
        return re.sub(r"[\W_]+", "", s.lower())

    return key(a) == key(b)


def _item_verdict(item: dict[str, Any], raw: str) -> Verdict:
    """The verdict in one JSON object of a batched answer."""
    questions, types = item.get("questions"), item.get("types")
    if isinstance(types, str):
        types = (
            None
            if _only_no_confusion(types) or types.strip().lower() in ("", "null", "none")
            else types
        )
    if isinstance(questions, str) and (_only_no_confusion(questions) or not questions.strip()):
        questions = None
    if types in (None, []):
        if questions:
            return unparsed("questions given without types", raw)
        return no_confusion(raw)
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        types = ", ".join(types)
    if not isinstance(types, str):
        return unparsed(f"types is {type(types).__name__}, not a list of labels", raw)
    if _says_no_confusion(types):
        return unparsed("'no confusion' mixed with types", raw)
    labels, error = parse_types(types)
    if labels is None:
        return unparsed(error, raw)
    asked = (
        questions if isinstance(questions, str) else ("" if questions is None else str(questions))
    )
    return Verdict(parsed=True, questions=_clean(asked), types=labels, answer=raw)


def _item_index(item: dict[str, Any], sentences: list[str]) -> int | None:
    """Which of ``sentences`` (0-based) the item answers, or None when it does not match."""
    number = item.get("sentence_num", item.get("sentence_number", item.get("num")))
    text = item.get("sentence")
    try:
        index = int(str(number).strip().rstrip(".")) - 1 if number is not None else None
    except ValueError:
        index = None
    if index is not None and 0 <= index < len(sentences):
        if text is None or _same_sentence(str(text), sentences[index]):
            return index
        return None  # number and sentence disagree: re-ask rather than guess
    if isinstance(text, str):
        matches = [i for i, s in enumerate(sentences) if _same_sentence(text, s)]
        return matches[0] if len(matches) == 1 else None
    return None


def parse_batch_answer(text: str, sentences: list[str]) -> tuple[dict[int, Verdict], str]:
    """Verdicts by 0-based position in ``sentences`` (matching items), and an error or ''.

    Missing, mismatched and duplicated items are absent: the caller asks again for those.
    """
    data = _json_list(text or "")
    if data is None:
        return {}, "no JSON list in the answer"
    found: dict[int, Verdict] = {}
    seen: set[int] = set()
    for item in data:
        if not isinstance(item, dict):
            continue
        index = _item_index(item, sentences)
        if index is None:
            continue
        if index in seen:  # two different answers for one sentence: trust neither
            found.pop(index, None)
            continue
        seen.add(index)
        found[index] = _item_verdict(item, json.dumps(item, ensure_ascii=False))
    return found, ""


def type_key(label: str) -> str:
    """'entity omission' -> 'type/entity_omission' (the value's name)."""
    return "type/" + label.replace(" ", "_")
