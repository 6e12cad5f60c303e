"""Asking a judge for a structured (JSON) answer: ``runner.api.judging``.

Tolerant parsing, bounded re-asks, counted failures. Part of the plugin API (versioned with
``runner.api``): every LLM-judged built-in metric goes through :func:`ask_json`, and a
researcher's metric can too, so they all behave the same way:

- the answer is read tolerantly (code fences, prose around the JSON, trailing commas,
  Python-style single quotes and True/False), but never guessed: a ``check`` function
  turns the parsed JSON into the metric's value or says what is wrong with it;
- an unreadable or ill-shaped answer is followed by one short turn asking to fix its form
  (same prefix, so prefix caches still apply), at most ``max_attempts`` calls in all, each
  with its own ``sample`` so the response cache does not replay the failed answer;
- what stays unreadable comes back as an :class:`Answer` with ``value=None`` and the
  error, for the metric to count and list as unparsed, never to score.

:func:`run_units` runs a document's independent judge calls concurrently up to the
judge's limit, after one first call that lets a provider cache the shared prefix.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from runner.api.errors import AuthError, LLMError
from runner.api.threads import thread_map
from runner.api.types import LLM, Completion, Message

T = TypeVar("T")

Check = Callable[[Any], tuple[Any, str]]
"""parsed JSON -> (value, "") when usable, or (None, what is wrong) to re-ask."""

REASK = (
    "Your answer could not be read ({error}). Answer the same request again with only "
    "the JSON object asked for, no other text."
)
"""The follow-up turn after an unreadable answer (our wording)."""

JSON_FORMAT: dict[str, Any] = {"type": "json_object"}
"""OpenAI-style JSON mode; llama.cpp turns it into a grammar, others drop it if unsupported."""


@dataclass
class Usage:
    """Judge calls and tokens spent on one unit of work (a sentence, a summary, ...)."""

    calls: int = 0
    cached_calls: int = 0
    """Of ``calls``, those served from the response cache (free, e.g. f1 after alignment)."""
    reasks: int = 0
    unparsed: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, completion: Completion, reask: bool) -> None:
        """Count one call."""
        self.calls += 1
        self.cached_calls += int(completion.cached)
        self.reasks += int(reask)
        self.prompt_tokens += completion.prompt_tokens
        self.cached_prompt_tokens += completion.cached_prompt_tokens
        self.completion_tokens += completion.completion_tokens

    def merge(self, other: Usage) -> None:
        """Add another unit's counts."""
        for name in (f.name for f in fields(self)):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def values(self, prefix: str = "judge_") -> dict[str, float]:
        """The counts as metric values (``judge_calls``, ``judge_unparsed``, ...)."""
        return {prefix + f.name: float(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class Answer:
    """One structured answer: the checked value, or None with the reason it is unusable."""

    value: Any
    """What ``check`` made of the JSON; None when unparsed."""
    error: str = ""
    """Why the last answer was unusable ('' when parsed)."""
    raw: str = ""
    """The judge's last answer text, kept for the artifact."""

    @property
    def parsed(self) -> bool:
        """True when the answer was read and checked."""
        return self.value is not None


def parse_json(text: str) -> Any:
    """The first JSON object or list in ``text``, read tolerantly; None when there is none."""
    text = re.sub(r"```(?:json)?", "", text or "")
    for blob in _candidates(text):
        for attempt in (blob, re.sub(r",\s*([\]}])", r"\1", blob)):
            try:
                return json.loads(attempt)
            except json.JSONDecodeError:
                pass
            try:  # {'a': True} from models that write Python
                value = ast.literal_eval(attempt)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, (dict, list)):
                return value
    return None


def _candidates(text: str) -> list[str]:
    """Balanced {...} / [...] spans, outermost first, in order of appearance."""
    out = []
    for opener, closer in (("{", "}"), ("[", "]")):
        start = text.find(opener)
        while start != -1:
            end = _balanced_end(text, start, opener, closer)
            if end is not None:
                out.append((start, text[start : end + 1]))
                break
            start = text.find(opener, start + 1)
        last = text.rfind(closer)  # an unbalanced answer: the widest span as a last try
        if start != -1 and last > start:
            out.append((start + len(text), text[start : last + 1]))
    return [blob for _, blob in sorted(out)]


def _balanced_end(text: str, start: int, opener: str, closer: str) -> int | None:
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
    return None


def ask_json(
    judge: LLM,
    messages: list[Message],
    check: Check,
    usage: Usage,
    *,
    purpose: str,
    max_attempts: int = 3,
    max_tokens: int = 512,
    temperature: float | None = None,
    sample_offset: int = 0,
) -> Answer:
    """Ask until ``check`` accepts the JSON answer or ``max_attempts`` calls are spent.

    A rejected key (``AuthError``) stops the run; any other failed call makes the answer
    unparsed with its cause, so one bad call costs one judgement, not the document.
    """
    current = list(messages)
    last = Answer(None, "not asked")
    for attempt in range(max(1, max_attempts)):
        try:
            completion = judge.complete(
                current,
                max_tokens=max_tokens,
                temperature=temperature,
                sample=sample_offset + attempt,
                purpose=purpose,
                response_format=JSON_FORMAT,
            )
        except AuthError:
            raise
        except LLMError as err:
            last = Answer(None, f"judge call failed: {err}", last.raw)
            break
        usage.add(completion, reask=attempt > 0)
        data = parse_json(completion.text)
        if data is None:
            last = Answer(None, "no JSON object in the answer", completion.text)
        else:
            value, error = check(data)
            if value is not None:
                return Answer(value, "", completion.text)
            last = Answer(None, error or "the JSON answer has the wrong shape", completion.text)
        current = [
            *messages,
            Message("assistant", completion.text or "(empty)"),
            Message("user", REASK.format(error=last.error)),
        ]
    usage.unparsed += 1
    return last


def run_units(units: Sequence[Callable[[], T]], judge: LLM) -> list[T]:
    """Run the units in order (``judge.concurrency`` 1) or in a pool up to it.

    Online, one first unit runs alone so the provider caches the shared prefix before the
    others arrive; a batched judge (``judge.batch``) gets them all at once, so they travel in
    one batch instead of two.
    """
    concurrency = getattr(judge, "concurrency", 1)
    if concurrency <= 1 or len(units) <= 1:
        return [unit() for unit in units]
    if getattr(judge, "batch", False):
        return thread_map(_run, units, concurrency)
    first = units[0]()
    rest = thread_map(_run, units[1:], concurrency)  # the calls stay the document's
    return [first, *rest]


def _run(unit: Callable[[], T]) -> T:
    return unit()


def key_of(data: Any, *names: str) -> Any:
    """``data[name]`` for the first name present, any case (models vary 'Verdict'/'verdict')."""
    if not isinstance(data, dict):
        return None
    lowered = {str(k).strip().lower(): v for k, v in data.items()}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def as_list(data: Any, *names: str) -> list[Any] | None:
    """A list given bare or under one of ``names`` in an object; None otherwise."""
    if isinstance(data, list):
        return data
    found = key_of(data, *names)
    return found if isinstance(found, list) else None


def as_number(value: Any) -> float | None:
    """A finite number from a JSON number or a numeric string; None for anything else.

    ``true``/``false`` are not numbers here; a table's cell reads the same way.
    """
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
