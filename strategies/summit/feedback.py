"""Reading the SummIt evaluator's answer: a score, its justification, edit operations, <STOP>.

The paper asks for "a probability distribution of assigning the score between 1-5 as well
as its justification" and suggestions restricted to five operations (section 3.4, Table 8):
Add / Remove / Rephrase the information of [...], Shorten the summary, Do nothing. Models
answer in many shapes, so parsing is tolerant:

- the distribution: ``k: p`` pairs for k in 1..5 (probabilities or percentages, normalized;
  at least two scores named); its expected value is the score. Failing that, a single stated
  score ("Score: 4", "4/5", "4 out of 5").
- operations: one per line (bullets and numbering stripped), by their verbs, imperative or
  gerund ("Consider removing ..."): add/include/insert, remove/delete/omit/drop,
  rephrase/reword/rewrite, shorten/simplify/condense, keep/"do nothing"/"no changes". The
  target is the information named, without "the information of", brackets or quotes.
- ``<STOP>`` anywhere, any case.

An answer with none of score, operations or <STOP> is unparsed; the strategy asks again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPERATIONS = ("add", "remove", "rephrase", "simplify", "keep")
"""The paper's five operations, in its order (Table 6's ablation drops one at a time)."""

_VERBS = {
    "add": r"add(?:ing)?|includ(?:e|ing)|insert(?:ing)?|mention(?:ing)?",
    "remove": r"remov(?:e|ing)|delet(?:e|ing)|omit(?:ting)?|drop(?:ping)?|cut(?:ting)?",
    "rephrase": r"rephras(?:e|ing)|reword(?:ing)?|rewrit(?:e|ing)|clarify(?:ing)?",
    "simplify": r"shorten(?:ing)?|simplif(?:y|ying)|condens(?:e|ing)|trim(?:ming)?",
    "keep": (
        r"do nothing|keep(?:ing)?"
        r"|no (?:further )?(?:changes?|revisions?)(?: (?:are|is) needed)?"
    ),
}
_OPERATION = re.compile(
    r"^(?:(?:consider|please|try|you (?:could|should|might))\s+)?(?P<verb>"
    + "|".join(f"(?P<{k}>{v})" for k, v in _VERBS.items())
    + r")\b(?P<rest>.*)$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)]|suggestions?\s*\d*\s*:)\s*", re.IGNORECASE)
_INFO = re.compile(
    r"^\s*(?:the\s+)?(?:information|info|details?|mention)\s+(?:of|about|on|regarding)\s+",
    re.IGNORECASE,
)
_WHERE = re.compile(r"\s+(?:from|in|to|into)\s+the\s+summary\b.*$", re.IGNORECASE)
_PAIR = re.compile(r"(?<![\d.])([1-5])\s*(?:points?)?\s*[:=]\s*(\d+(?:\.\d+)?)\s*(%?)")
_SINGLE = (
    re.compile(r"\bscore\s*(?:is|of|:|=)?\s*([1-5](?:\.\d+)?)\b(?!\s*[:=])", re.IGNORECASE),
    re.compile(r"\b([1-5](?:\.\d+)?)\s*(?:/|out of)\s*5\b", re.IGNORECASE),
)
_STOP = re.compile(r"<\s*stop\s*>", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z])")
_SECTION = re.compile(
    r"^\s*(?:suggestions?|revis(?:e|ion) (?:comments?|suggestions?))\s*:?\s*(.*)$", re.IGNORECASE
)
_JUSTIFICATION = re.compile(
    r"^\s*(?:justification|rationale|explanation)\s*:\s*(.*)$", re.IGNORECASE
)


@dataclass(frozen=True)
class Operation:
    """One suggested edit."""

    kind: str
    """One of ``OPERATIONS``."""
    target: str
    """The information to add, remove or rephrase ('' for simplify and keep)."""

    def render(self) -> str:
        """The suggestion in the paper's wording, as the summarizer's Refine turn shows it."""
        return {
            "add": f"Add the information of {self.target}",
            "remove": f"Remove the information of {self.target} from the summary",
            "rephrase": f"Rephrase the information of {self.target} in the summary",
            "simplify": "Shorten the summary.",
            "keep": "Do nothing.",
        }[self.kind]


@dataclass(frozen=True)
class Feedback:
    """The evaluator's answer, parsed."""

    score: float | None
    """Expected value of the distribution, else the stated score (1-5); None when absent."""
    distribution: dict[int, float] | None
    """Score -> probability (normalized), when the answer gave one."""
    justification: str
    """The stated rationale ('' when the answer has no such line)."""
    operations: tuple[Operation, ...]
    """Suggested edits among the allowed operations, in order."""
    dropped: tuple[Operation, ...]
    """Suggested edits of operations the run does not allow (the ablation)."""
    stop: bool
    """The answer contains <STOP>."""

    @property
    def parsed(self) -> bool:
        """Something usable was found: a score, an operation or <STOP>."""
        return self.score is not None or bool(self.operations or self.dropped) or self.stop

    @property
    def keep_only(self) -> bool:
        """Every suggestion is Keep / Do nothing (and there is at least one)."""
        return bool(self.operations) and all(o.kind == "keep" for o in self.operations)


def parse_feedback(text: str, allowed: tuple[str, ...] = OPERATIONS) -> Feedback:
    """Score, justification and operations of one evaluator answer."""
    distribution = _distribution(text)
    score = _expected(distribution) if distribution else _single_score(text)
    kept: list[Operation] = []
    dropped: list[Operation] = []
    for op in _operations(text):
        (kept if op.kind in allowed else dropped).append(op)
    return Feedback(
        score,
        distribution,
        _justification(text),
        tuple(kept),
        tuple(dropped),
        bool(_STOP.search(text)),
    )


def _distribution(text: str) -> dict[int, float] | None:
    pairs: dict[int, float] = {}
    for score, value, percent in _PAIR.findall(text):
        pairs.setdefault(int(score), float(value) / (100.0 if percent else 1.0))
    total = sum(pairs.values())
    if len(pairs) < 2 or total <= 0:
        return None
    return {k: v / total for k, v in sorted(pairs.items())}


def _expected(distribution: dict[int, float]) -> float:
    return sum(k * p for k, p in distribution.items())


def _single_score(text: str) -> float | None:
    for pattern in _SINGLE:
        found = pattern.search(text)
        if found:
            return float(found.group(1))
    return None


def _justification(text: str) -> str:
    for line in text.splitlines():
        found = _JUSTIFICATION.match(line)
        if found:
            return found.group(1).strip()
    return ""


def _suggestion_lines(text: str) -> list[str]:
    """Lines after a 'Suggestions:' header when there is one, else every line."""
    lines = [_STOP.sub("", line) for line in text.splitlines()]
    for index, line in enumerate(lines):
        header = _SECTION.match(line)
        if header:
            return [header.group(1), *lines[index + 1 :]]
    return lines


def _operations(text: str) -> list[Operation]:
    found = []
    for raw in _suggestion_lines(text):
        if _JUSTIFICATION.match(raw):
            continue
        for sentence in _SENTENCE_END.split(_BULLET.sub("", raw).strip()):
            op = _operation(sentence)
            if op is not None:
                found.append(op)
    return found


def _operation(sentence: str) -> Operation | None:
    match = _OPERATION.match(sentence.strip())
    if not match:
        return None
    kind = next(k for k in OPERATIONS if match.group(k))
    target = "" if kind in ("simplify", "keep") else _target(match.group("rest"))
    return Operation(kind, target) if kind in ("simplify", "keep") or target else None


def _target(rest: str) -> str:
    target = _INFO.sub("", rest.strip())
    target = _WHERE.sub("", target).strip().rstrip(".;,").strip()
    return target.strip("[]\"'“”‘’ ").strip()
