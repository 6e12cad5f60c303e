"""Split a document into chunks of at most ``chunk`` tokens without losing a character.

Whole paragraphs are packed greedily; a paragraph longer than the budget is split at
sentence ends, and a sentence longer than the budget at token boundaries (rare, but a
book can hold a 3,000-token run-on list). Each chunk keeps its trailing whitespace, so
``"".join(c.text for c in chunks) == text`` holds exactly; tests assert it.
"""

from __future__ import annotations

import re

from runner.errors import ConfigError
from runner.text import count_tokens, decode, encode, sentence_spans
from runner.types import Chunk

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")


def split_into_chunks(text: str, chunk: int) -> list[Chunk]:
    """Chunks of ``text`` of at most ``chunk`` tokens each, in order, covering all of it."""
    if chunk <= 0:
        raise ConfigError(f"chunk={chunk} must be a positive number of tokens; try chunk=2048")
    pieces: list[str] = []
    for paragraph in _paragraphs(text):
        pieces.extend(_fit(paragraph, chunk))
    return [Chunk(i, t, count_tokens(t)) for i, t in enumerate(_pack(pieces, chunk))]


def _paragraphs(text: str) -> list[str]:
    """Paragraphs with their trailing blank lines attached, so nothing is dropped."""
    parts: list[str] = []
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        parts.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        parts.append(text[start:])
    return parts


def _fit(piece: str, chunk: int) -> list[str]:
    """``piece`` itself when it fits, else its sentences, else token slices."""
    if count_tokens(piece) <= chunk:
        return [piece]
    spans = sentence_spans(piece)
    if len(spans) > 1:
        cuts = [start for start, _ in spans[1:]]
        sentences = [piece[a:b] for a, b in zip([0, *cuts], [*cuts, len(piece)])]
        out: list[str] = []
        for sentence in sentences:
            out.extend(_fit(sentence, chunk))
        return out
    return _split_by_tokens(piece, chunk)


def _split_by_tokens(piece: str, chunk: int) -> list[str]:
    """Slices of at most ``chunk`` tokens; re-decoding keeps every character."""
    tokens = encode(piece)
    slices = [decode(tokens[i : i + chunk]) for i in range(0, len(tokens), chunk)]
    if "".join(slices) != piece:  # a multi-byte character straddled a cut: keep it whole
        return [piece]
    return slices


def _pack(pieces: list[str], chunk: int) -> list[str]:
    """Greedy packing of consecutive pieces into chunks of at most ``chunk`` tokens."""
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        candidate = current + piece
        if current and count_tokens(candidate) > chunk:
            chunks.append(current)
            current = piece
        else:
            current = candidate
    if current:
        chunks.append(current)
    return chunks
