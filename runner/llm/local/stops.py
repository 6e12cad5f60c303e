"""Stop the embedded model when it starts retelling what it has written, or copying its prompt.

llama.cpp's repeat penalty looks back 64 tokens, so the 0.5B summarizer still writes a
sentence it wrote a paragraph earlier, reworded or verbatim, and a 200-token summary with
one such sentence is 10-20% repeated trigrams. With ``model.stop_on_repeated_sentence``
a logits processor watches the answer as it grows: when a finished sentence mostly
(``OVERLAP``) repeats the answer's earlier trigrams, it ends generation, and the answer is
cut before that sentence. With ``model.stop_on_copied_sentence`` a sentence (after the
first, so an answer is never cut to nothing) that is mostly (``COPIED``) trigrams of the
prompt ends it the same way: the 0.5B summarizer often answers "summarize this story" by
retelling a sentence or two and then copying the story. Plain text functions, so they are
tested without the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from typing import Any

OVERLAP = 0.4
"""Share of a sentence's word trigrams already in the answer that makes it a repeat."""
COPIED = 0.75
"""Share of a sentence's word trigrams found in the prompt (and not in the role's own
earlier answers) that makes it a copy. A retelling that keeps names and a phrase or two
("Ilse Varga reaches platform four with ninety seconds left") stays near 60%."""
MIN_WORDS = 5
"""Shorter sentences ('He left.') are never called repeats."""
_ENDS = ".!?\"'”’)"
"""Characters a sentence (or its closing quote) can end with."""
_SENTENCE_END = re.compile(r"[.!?][\"'”’)]*\s+")


Trigram = tuple[str, ...]


def _trigrams(text: str) -> list[Trigram]:
    words = re.findall(r"\w+", text.lower())
    return [tuple(words[i : i + 3]) for i in range(len(words) - 2)]


def _sentence_ends(text: str) -> Iterator[int]:
    """Where sentences end, never inside an open quotation.

    'text: "Wind SW, fresh. Lit at five." The ledger...' is one sentence up to its closing
    quote, so a cut never leaves a quotation open.
    """
    straight = opened = closed = last = 0
    for match in _SENTENCE_END.finditer(text + " "):
        piece, last = text[last : match.end()], match.end()
        straight, opened, closed = (
            straight + piece.count('"'),
            opened + piece.count("\u201c"),
            closed + piece.count("\u201d"),
        )
        if straight % 2 == 0 and opened <= closed:
            yield match.end()


def _mostly(grams: list[Trigram], pool: Collection[Trigram], share: float) -> bool:
    """Whether at least ``share`` of a sentence's trigrams are in ``pool``.

    A sentence under ``MIN_WORDS`` words never is.
    """
    return len(grams) >= MIN_WORDS - 2 and sum(g in pool for g in grams) >= share * len(grams)


def source_trigrams(prompt: str, own: str = "") -> frozenset[Trigram]:
    """Trigrams an answer would copy: the prompt's, less those of the role's own answers."""
    return frozenset(_trigrams(prompt)) - frozenset(_trigrams(own))


def first_repeat(
    text: str, source: frozenset[Trigram] = frozenset(), repeats: bool = True
) -> int | None:
    """Offset of the first finished sentence (after the first) that repeats or copies.

    It mostly repeats the text before it (when ``repeats``) or is mostly copied from
    ``source``; None when no sentence does.
    """
    start = 0
    for end in _sentence_ends(text):
        grams = _trigrams(text[start:end])
        if start:  # the first sentence is always kept
            if repeats and _mostly(grams, set(_trigrams(text[:start])), OVERLAP):
                return start
            if source and _mostly(grams, source, COPIED):
                return start
        start = end
    return None


def opens_with_copy(text: str, source: frozenset[Trigram]) -> bool:
    """Whether the first sentence is mostly copied from ``source``.

    It is never cut, so a sampled answer that opens with a copy is drawn again instead.
    """
    end = next(_sentence_ends(text), len(text))
    return _mostly(_trigrams(text[:end]), source, COPIED)


def cut_repeats(text: str, source: frozenset[Trigram] = frozenset(), repeats: bool = True) -> str:
    """``text`` up to its first repeated or copied sentence (all of it when there is none)."""
    at = first_repeat(text, source, repeats)
    return text if at is None else text[:at].rstrip()


def stop_processor(
    detokenize: Callable[[list[int]], str],
    eos: int,
    source: frozenset[Trigram] = frozenset(),
    repeats: bool = True,
) -> Callable[[Any, Any], Any]:
    """A llama-cpp-python logits processor that ends generation at a repeated sentence.

    It forces end-of-generation once the answer holds a repeated (or copied) sentence. Its
    first call sees the prompt alone, which fixes where the answer starts; the whole answer
    is decoded only after a token that may end a sentence.
    """
    prompt: list[int] = []

    def process(input_ids: Any, scores: Any) -> Any:
        if not prompt:
            prompt.append(len(input_ids))
            return scores
        answer = [int(t) for t in input_ids[prompt[0] :]]
        last = detokenize(answer[-1:]).rstrip()
        if not (last and last[-1] in _ENDS):  # most tokens: no sentence ended, nothing to decode
            return scores
        text = detokenize(answer).rstrip()
        if first_repeat(text + " ", source, repeats) is not None:
            scores[:] = -float("inf")
            scores[eos] = 0.0
        return scores

    return process


class OwnAnswers:
    """One role's answers per document: its own text, which no copy stop counts as a copy.

    A running summary, level-0 summaries or SummIt's summary are the role's own words, not a
    copy of the prompt they reappear in. Cached answers are added too, so a resumed run
    decides alike. One per gateway (role) whose model sets ``stop_on_copied_sentence``.
    """

    def __init__(self) -> None:
        """No answers yet."""
        self._answers: dict[str | None, list[str]] = {}

    def add(self, document: str | None, text: str) -> None:
        """Remember an answer given for ``document`` (None: outside any document)."""
        self._answers.setdefault(document, []).append(text)

    def text(self, document: str | None) -> str:
        """Every answer given for ``document`` so far, one per line."""
        return "\n".join(self._answers.get(document, []))
