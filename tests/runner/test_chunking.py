from __future__ import annotations

import itertools
import os
import random
import re

import pytest

from runner.api import chunking
from runner.api.chunking import split_into_chunks
from runner.api.errors import ConfigError
from runner.api.text import count_tokens, decode, encode, sentence_spans
from runner.data.loaders import load_documents
from tests.conftest import SHARED_DATA

BOOK = SHARED_DATA / "reminiscences-of-pioneer-days-in-st-paul.txt"


def shared_book_text() -> str:
    """The 57k-token book from ../shared/data; absent, skip, except on CI (CI=true): fail."""
    if not BOOK.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{BOOK} is absent but CI=true: CI must provide ../shared/data")
        pytest.skip("../shared/data is absent (fresh clone): shared-data check skipped")
    return BOOK.read_text(encoding="utf-8")


def reference_chunks(text: str, chunk: int) -> list[str]:
    """The chunking rule spelled out naively, as the oracle for ``split_into_chunks``.

    Paragraphs keep their trailing blank lines; a paragraph over ``chunk`` tokens becomes
    its sentences, a sentence still over it becomes token slices (unless a multi-byte
    character straddles a cut). Pieces are packed greedily, counting every candidate chunk
    in full: quadratic, deliberately, so no estimate can hide here.
    """
    parts = re.split(r"(\n[ \t]*\n\s*)", text)  # [para, break, para, break, ..., para]
    paragraphs = [p + b for p, b in zip(parts[::2], [*parts[1::2], ""], strict=True) if p + b]
    pieces = [piece for paragraph in paragraphs for piece in _reference_fit(paragraph, chunk)]
    chunks: list[str] = []
    for piece in pieces:
        if chunks and count_tokens(chunks[-1] + piece) <= chunk:
            chunks[-1] += piece
        else:
            chunks.append(piece)
    return chunks


def _reference_fit(piece: str, chunk: int) -> list[str]:
    if count_tokens(piece) <= chunk:
        return [piece]
    starts = [start for start, _ in sentence_spans(piece)][1:]
    if starts:
        bounds = [0, *starts, len(piece)]
        return [p for a, b in itertools.pairwise(bounds) for p in _reference_fit(piece[a:b], chunk)]
    tokens = encode(piece)
    slices = [decode(tokens[i : i + chunk]) for i in range(0, len(tokens), chunk)]
    return slices if "".join(slices) == piece else [piece]


def _check(text: str, chunk: int, within_budget: bool = True) -> list[str]:
    chunks = split_into_chunks(text, chunk)
    assert "".join(c.text for c in chunks) == text  # nothing dropped, nothing reordered
    assert all(c.n_tokens <= chunk for c in chunks) or not within_budget
    assert all(c.n_tokens == count_tokens(c.text) for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    return [c.text for c in chunks]


@pytest.mark.parametrize("chunk", [64, 256, 512, 1024, 2048])
def test_sample_corpus_matches_the_naive_reference(chunk: int) -> None:
    for doc in load_documents("sample"):
        assert _check(doc.text, chunk) == reference_chunks(doc.text, chunk), doc.doc_id


@pytest.mark.parametrize("chunk", [2048, 8192])
def test_shared_book_matches_the_naive_reference(chunk: int) -> None:
    text = shared_book_text()
    assert _check(text, chunk) == reference_chunks(text, chunk)


@pytest.mark.parametrize("chunk", [2048, 88000])
def test_shared_book_is_conserved(chunk: int) -> None:
    pieces = _check(shared_book_text(), chunk)
    if chunk == 88000:
        assert len(pieces) == 1


@pytest.mark.parametrize("chunk", [2048, 60000])
def test_shared_book_is_counted_a_bounded_number_of_times(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = shared_book_text()
    counted = [0]

    def counting(piece: str) -> int:
        counted[0] += len(piece)
        return count_tokens(piece)

    monkeypatch.setattr(chunking, "count_tokens", counting)
    split_into_chunks(text, chunk)
    assert counted[0] <= 4 * len(text)  # was 215x at 60000, 10.6x at 2048


def test_awkward_text_matches_the_naive_reference() -> None:
    """Odd whitespace, indents, CRLF, emoji and long runs at joins, at tiny budgets.

    The budget is not asserted: when a token cut would split a multi-byte character (the
    emoji here), the whole sentence is kept over budget, by both implementations.
    """
    rng = random.Random(7)
    words = [
        "the",
        "St.",
        "Mr.",
        "3.5",
        "don't",
        "J.",
        "é",
        "日本語",
        "😀",
        "“Yes,”",
        "x" * 30,
        "===",
    ]
    seps = [" ", "  ", "\t", "\n", "\n\n", "\n\n    ", " \n\n", ". ", "!! ", ".\n\n", "\r\n\r\n"]
    for _ in range(150):
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 120)))
        chunk = rng.choice([4, 8, 16, 32, 64])
        assert _check(text, chunk, within_budget=False) == reference_chunks(text, chunk)


def test_a_wrong_estimate_is_caught_and_redone_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the per-join allowance made negative, running sums undercount; output holds."""
    monkeypatch.setattr(chunking, "_JOIN_SLACK", -3)
    for doc in load_documents("sample"):
        assert _check(doc.text, 256) == reference_chunks(doc.text, 256)


def test_sample_gives_several_chunks_per_story_at_1024() -> None:
    for doc in load_documents("sample"):
        assert len(split_into_chunks(doc.text, 1024)) >= 3


def test_whole_paragraphs_are_packed_greedily() -> None:
    paragraphs = [f"Paragraph {i} has a few words in it." for i in range(30)]
    text = "\n\n".join(paragraphs)
    pieces = _check(text, 60)
    assert len(pieces) > 1
    assert pieces == reference_chunks(text, 60)
    for piece in pieces:  # every chunk boundary falls between paragraphs
        assert piece.rstrip().endswith("it.")


def test_oversized_paragraph_is_split_at_sentence_ends() -> None:
    paragraph = " ".join(f"Mr. Smith walked to St. Paul on day {i}." for i in range(80))
    pieces = _check(paragraph + "\n\nA short one.", 100)
    assert len(pieces) > 5
    assert all(p.rstrip().endswith(".") for p in pieces)


def test_a_sentence_longer_than_the_chunk_is_cut_by_tokens() -> None:
    text = "word " * 500
    pieces = _check(text, 64)
    assert len(pieces) >= 8
    assert pieces == reference_chunks(text, 64)


def test_empty_text_gives_no_chunks() -> None:
    assert split_into_chunks("", 64) == []


def test_non_positive_chunk_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="chunk=0"):
        split_into_chunks("text", 0)
