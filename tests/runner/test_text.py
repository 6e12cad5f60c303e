from __future__ import annotations

from runner.text import count_tokens, cut_to_sentence_end, ends_with_sentence_end, split_sentences


def test_punkt_keeps_abbreviations_inside_sentences() -> None:
    text = (
        "Mr. Smith went to St. Paul at 9 a.m. on Monday. He met Dr. Jones there. "
        '"Why now?" she asked. They left for Washington, D.C. by train.'
    )
    assert split_sentences(text) == [
        "Mr. Smith went to St. Paul at 9 a.m. on Monday.",
        "He met Dr. Jones there.",
        '"Why now?"',
        "she asked.",
        "They left for Washington, D.C. by train.",
    ]


def test_cut_to_sentence_end() -> None:
    assert cut_to_sentence_end("One here. Two there. And a dangling") == "One here. Two there."
    assert cut_to_sentence_end("no terminal at all") == ""
    assert cut_to_sentence_end("Complete. ") == "Complete."


def test_ends_with_sentence_end() -> None:
    assert ends_with_sentence_end('He said "go."')
    assert ends_with_sentence_end("Done!  \n")
    assert not ends_with_sentence_end("and then")


def test_count_tokens_is_cl100k_offline() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
