"""The Table 2 statistics: length, words, sentences, % novel and % repeated trigrams."""

from __future__ import annotations

import math

import pytest

from metrics.stats import score, trigrams
from runner.api.text import count_tokens, words
from runner.api.types import Document
from tests.helpers.plugins import built_ins

METRICS = built_ins("metrics")


def test_words_are_lowercased_without_punctuation() -> None:
    assert words('Don’t STOP—the café\'s well-known ("naïve") fox!') == [
        "don't",
        "stop",
        "the",
        "café's",
        "well",
        "known",
        "naïve",
        "fox",
    ]


def test_counts() -> None:
    summary = "The old man sails out. He catches a fish!"
    v = score(None, summary).values
    assert v["length_tokens"] == count_tokens(summary)
    assert v["words"] == 9 and v["sentences"] == 2


def test_novel_trigrams_against_the_source() -> None:
    source = Document("d", "The old man sails out to sea. Nothing else happens.")
    v = score(source, "the old man sails home").values
    # trigrams: (the old man) (old man sails) in the source; (man sails home) novel
    assert v["novel_trigrams_pct"] == pytest.approx(100 / 3)


def test_repeated_trigrams_count_every_occurrence_of_a_repeated_trigram() -> None:
    v = score(None, "a b c a b c d").values
    # 5 trigrams: abc, bca, cab, abc, bcd; abc occurs twice -> 2 of 5
    assert v["repeated_trigrams_pct"] == pytest.approx(40.0)
    assert len(trigrams(words("a b c a b c d"))) == 5


def test_no_source_skips_novelty_with_a_notice() -> None:
    result = score(None, "one two three four")
    assert math.isnan(result.values["novel_trigrams_pct"])  # given (a headline), undecidable
    assert any("no source document" in n for n in result.notes)
    assert result.values["repeated_trigrams_pct"] == 0.0


def test_too_short_for_trigrams_is_nan_with_a_note() -> None:
    result = score(Document("d", "x y z"), "Hi there.")
    assert math.isnan(result.values["novel_trigrams_pct"])
    assert math.isnan(result.values["repeated_trigrams_pct"])
    assert any("fewer than three words" in n for n in result.notes)


def test_registered_without_a_judge() -> None:
    from metrics import stats

    assert METRICS["stats"] is stats and stats.ROLES == ()
