from __future__ import annotations

import pytest

from runner.chunking import split_into_chunks
from runner.documents import load_documents
from runner.errors import ConfigError
from runner.text import count_tokens
from tests.conftest import shared_book


def _check(text: str, chunk: int) -> list[str]:
    chunks = split_into_chunks(text, chunk)
    assert "".join(c.text for c in chunks) == text  # nothing dropped, nothing reordered
    assert all(c.n_tokens <= chunk for c in chunks)
    assert all(c.n_tokens == count_tokens(c.text) for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    return [c.text for c in chunks]


@pytest.mark.parametrize("chunk", [256, 512, 1024, 2048])
def test_sample_corpus_is_conserved(chunk: int) -> None:
    for doc in load_documents("sample"):
        _check(doc.text, chunk)


def test_sample_gives_several_chunks_per_story_at_1024() -> None:
    for doc in load_documents("sample"):
        assert len(split_into_chunks(doc.text, 1024)) >= 3


@pytest.mark.parametrize("chunk", [2048, 88000])
def test_shared_book_is_conserved(chunk: int) -> None:
    text = shared_book().read_text(encoding="utf-8")
    pieces = _check(text, chunk)
    if chunk == 88000:
        assert len(pieces) == 1


def test_whole_paragraphs_are_packed_greedily() -> None:
    paragraphs = [f"Paragraph {i} has a few words in it." for i in range(30)]
    text = "\n\n".join(paragraphs)
    pieces = _check(text, 60)
    assert len(pieces) > 1
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


def test_non_positive_chunk_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="chunk=0"):
        split_into_chunks("text", 0)
