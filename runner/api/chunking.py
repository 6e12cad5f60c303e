"""Split a document into chunks of at most ``chunk`` tokens without losing a character.

Whole paragraphs are packed greedily; a paragraph longer than the budget is split at
sentence ends, and a sentence longer than the budget at token boundaries (rare, but a
book can hold a 3,000-token run-on list). Each chunk keeps its trailing whitespace, so
``"".join(c.text for c in chunks) == text`` holds exactly; tests assert it.

Packing is linear in the document: each piece is tokenized once, and a chunk is counted
in full only near the limit and once when done (see ``_take``); on the 57k-token book,
``count_tokens`` sees each character 2.0 times at chunk=60000, 3.3 at 2048, 4.3 at 64.
Counting the growing chunk for every piece, as before, was quadratic: ~4 s at 60000.
"""

from __future__ import annotations

import re

from runner.api.errors import ConfigError
from runner.api.text import count_tokens, decode, encode, sentence_spans
from runner.api.types import Chunk

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")

# BPE counts are not additive: count(a + b) - count(a) - count(b) is usually 0 or -1 at a
# paragraph or sentence join (a trailing space merges into the next word), and was never
# above +1 on the sample stories or the 57k-token book. We allow this much per join before
# trusting a running sum; an undercount beyond it is still caught (see ``_pack``).
_JOIN_SLACK = 1

Piece = tuple[str, int]  # text and its exact token count


def split_into_chunks(text: str, chunk: int) -> list[Chunk]:
    """Chunks of ``text`` of at most ``chunk`` tokens each, in order, covering all of it."""
    if chunk <= 0:
        raise ConfigError(f"chunk={chunk} must be a positive number of tokens; try chunk=2048")
    pieces = [piece for paragraph in _paragraphs(text) for piece in _fit(paragraph, chunk)]
    return [Chunk(i, t, n) for i, (t, n) in enumerate(_pack(pieces, chunk))]


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


def _fit(piece: str, chunk: int) -> list[Piece]:
    """``piece`` itself when it fits, else its sentences, else token slices; with counts."""
    n = count_tokens(piece)
    if n <= chunk:
        return [(piece, n)]
    spans = sentence_spans(piece)
    if len(spans) > 1:
        cuts = [start for start, _ in spans[1:]]
        sentences = [piece[a:b] for a, b in zip([0, *cuts], [*cuts, len(piece)], strict=True)]
        return [fitted for sentence in sentences for fitted in _fit(sentence, chunk)]
    return _split_by_tokens(piece, n, chunk)


def _split_by_tokens(piece: str, n: int, chunk: int) -> list[Piece]:
    """Slices of at most ``chunk`` tokens; re-decoding keeps every character."""
    tokens = encode(piece)
    slices = [decode(tokens[i : i + chunk]) for i in range(0, len(tokens), chunk)]
    if "".join(slices) != piece:  # a multi-byte character straddled a cut: keep it whole
        return [(piece, n)]
    return [(s, count_tokens(s)) for s in slices]


def _pack(pieces: list[Piece], chunk: int) -> list[Piece]:
    """Greedy packing: a chunk takes the next piece unless the result exceeds ``chunk``.

    Every chunk's count is exact. Should it exceed ``chunk`` although it holds several
    pieces, a running sum let in a piece that the greedy rule refuses: the chunk is then
    redone counting every candidate (never needed on real text; tests force it).
    """
    chunks: list[Piece] = []
    start = 0
    while start < len(pieces):
        end, text, n = _take(pieces, start, chunk, exact=False)
        if n > chunk and end - start > 1:
            end, text, n = _take(pieces, start, chunk, exact=True)
        chunks.append((text, n))
        start = end
    return chunks


def _take(pieces: list[Piece], start: int, chunk: int, exact: bool) -> tuple[int, str, int]:
    """The chunk starting at ``pieces[start]``: (end index, text, exact token count).

    ``total`` is the chunk's count at its last exact count plus the counts of the ``joins``
    pieces taken since. While that sum plus ``_JOIN_SLACK`` per join stays within ``chunk``
    the next piece is taken on the estimate; nearer the limit the candidate is counted
    exactly, and only an exact count refuses a piece. With ``exact=True`` every candidate
    is counted (the old, quadratic rule; ``_pack`` falls back to it).
    """
    parts = [pieces[start][0]]
    total, joins = pieces[start][1], 0
    end = start + 1
    while end < len(pieces):
        piece, n = pieces[end]
        if exact or total + n + (joins + 1) * _JOIN_SLACK > chunk:
            counted = count_tokens("".join(parts) + piece)
            if counted > chunk:
                break
            total, joins = counted, 0
        else:
            total, joins = total + n, joins + 1
        parts.append(piece)
        end += 1
    text = "".join(parts)
    return end, text, total if joins == 0 else count_tokens(text)
