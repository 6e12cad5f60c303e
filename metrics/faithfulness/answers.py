"""Reading a rater's answer: Yes / No (StorySumm's raters) and True / False (FABLES').

The releases' own parsers turn anything they cannot read into "unfaithful" (StorySumm's
GPT branch leaves it unset, its Claude branch scores any tag other than ``Yes`` as 0,
FABLES' counts anything but exactly ``True`` as unsupported). Here an answer that says
neither is undecided (None), so a rambling judge shows up as NaN with a note instead of
as a silent 0.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)
_LEADING = re.compile(r"^[\s\"'*`(\[]*([A-Za-z]+)")


def yes_no(text: str) -> bool | None:
    """True for Yes, False for No: inside ``<answer></answer>``, else the leading word."""
    return _word(text, {"yes": True, "no": False})


def true_false(text: str) -> bool | None:
    """True for True, False for False: the leading word (or one inside answer tags)."""
    return _word(text, {"true": True, "false": False})


def _word(text: str, words: dict[str, bool]) -> bool | None:
    tagged = _TAG.search(text or "")
    body = tagged.group(1) if tagged else (text or "")
    match = _LEADING.match(body)
    if match is None:
        return None
    return words.get(match.group(1).lower())
