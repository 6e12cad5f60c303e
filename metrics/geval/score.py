"""A G-Eval score read from the judge's answer.

The first number on the scale, and the probability-weighted score from the first score
token's alternatives (the paper's form).
"""

from __future__ import annotations

import math
import re
from typing import Any

from runner.api import Completion

_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")
_RANGE = re.compile(r"\d+\s*(?:-|–|to)\s*\d+")


def parse_score(text: str, low: int, high: int) -> tuple[float, int] | None:
    """(score, character offset) of the first number outside an echoed range.

    None when there is none or it is off the scale.
    """
    ranges = [m.span() for m in _RANGE.finditer(text or "")]
    for found in _NUMBER.finditer(text or ""):
        if any(a <= found.start() < b for a, b in ranges):
            continue
        value = float(found.group())
        return (value, found.start()) if low <= value <= high else None
    return None


def weighted_score(completion: Completion, low: int, high: int) -> dict[str, Any] | None:
    """{score, distribution, mass} from the first score token's alternatives.

    None when the completion carries none.
    """
    position = _score_position(completion, low, high)
    if position is None:
        return None
    probs: dict[int, float] = {}
    for token, logprob in completion.top_logprobs[position].items():
        t = token.strip()
        if t.isdigit() and low <= int(t) <= high:
            probs[int(t)] = probs.get(int(t), 0.0) + math.exp(logprob)
    mass = sum(probs.values())
    if mass <= 0:
        return None
    dist = {s: p / mass for s, p in sorted(probs.items())}
    return {"score": sum(s * p for s, p in dist.items()), "distribution": dist, "mass": mass}


def _score_position(completion: Completion, low: int, high: int) -> int | None:
    """The token the parsed score starts in, when the chosen tokens spell the text.

    Otherwise the first token whose likeliest alternative is a number.
    """
    chosen = [max(alts, key=alts.__getitem__) if alts else "" for alts in completion.top_logprobs]
    found = parse_score(completion.text, low, high)
    if found is not None and "".join(chosen) == completion.text:
        end = 0
        for index, token in enumerate(chosen):
            end += len(token)
            if end > found[1]:
                return index
    digits = [i for i, t in enumerate(chosen) if t.strip().isdigit()]
    return digits[0] if digits else None
