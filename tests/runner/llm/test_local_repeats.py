"""The repeated-sentence stop of the embedded summarizer, on texts whose repeats are known."""

from __future__ import annotations

import numpy as np

from runner.llm.local.stops import (
    cut_repeats,
    first_repeat,
    opens_with_copy,
    source_trigrams,
    stop_processor,
)

LIGHTHOUSE = (  # the local model's baseline answer on the sample story, before the stop
    "The story begins with Nell Tregarth, a young woman in Bristol. She was taken to Porthwenna "
    "by a letter three lines long and signed by a solicitor named Hoskin. She was given her "
    "uncle's quarters until Friday.\n\nThe letter that brought Nell Tregarth to Porthwenna was "
    "three lines long and signed by a solicitor named Hoskin. "
    "Her uncle had fallen from the gallery."
)


def test_a_retold_sentence_is_found_where_it_starts() -> None:
    at = first_repeat(LIGHTHOUSE)
    assert at == LIGHTHOUSE.index("The letter that brought")
    assert cut_repeats(LIGHTHOUSE).endswith("She was given her uncle's quarters until Friday.")


def test_new_sentences_and_short_echoes_are_kept() -> None:
    text = (
        "June wins a scholarship. Her father works in the copper mine. He hides an injury from "
        "the company. June finds the accident report. She leaves for college in the autumn."
    )
    assert first_repeat(text) is None and cut_repeats(text) == text
    short = "He left. He left. The mine closed that winter and the town emptied."  # under 5 words
    assert first_repeat(short) is None


def test_a_sentence_repeating_two_fifths_counts_and_one_repeating_a_seventh_does_not() -> None:
    base = "The keeper kept a ledger of every ship that passed the point at night."
    half = " The keeper kept a ledger of every ship, and the widow burned it in March."  # 6 of 13
    third = " A clerk from Truro found the ledger of every ship in a drawer last June."
    assert first_repeat(base + half) == len(base) + 1
    assert first_repeat(base + third) is None


def test_the_processor_ends_generation_once_a_repeat_is_written() -> None:
    words = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L"]
    vocab = {i: w for i, w in enumerate(words)}
    vocab.update({20: " ", 21: ".", 22: "<eos>"})

    def detok(ids: list[int]) -> str:
        return "".join(vocab[i] if vocab[i] in (" ", ".") else vocab[i].lower() + "x" for i in ids)

    process = stop_processor(detok, eos=22)
    prompt = [0, 1, 2]
    sentence = [3, 20, 4, 20, 5, 20, 6, 20, 7, 21, 20]  # "dx ex fx gx hx. "
    scores = np.zeros(23, dtype=np.float32)
    assert process(np.array(prompt), scores.copy()).max() == 0  # the prompt alone: untouched
    once = process(np.array(prompt + sentence), scores.copy())
    assert np.isfinite(once).all()  # one sentence: nothing repeated yet
    twice = process(np.array(prompt + sentence + sentence[:-1]), scores.copy())
    assert int(np.argmax(twice)) == 22 and np.isinf(twice[:22]).all()  # only end-of-generation left


STORY = (
    "Three weeks earlier her grandfather, Matthias Varga, had died in the farmhouse at Orsa, where "
    "the Vargas had grown grapes for six generations. After the funeral a man named Leopold Sarn "
    "explained, very courteously, that the Vargas did not own their land."
)
ANSWER = (  # the local model's baseline answer on the night-train story, before the copy stop
    "The Night Train to Verrin begins at Halst Central. Ilse Varga reaches platform four with "
    "ninety seconds left. Three weeks earlier her grandfather, Matthias Varga, had died in the "
    "farmhouse at Orsa, where the Vargas had grown grapes for six generations. "
    "Sarn wants the valley."
)


def test_a_copied_sentence_ends_the_answer_and_a_retelling_does_not() -> None:
    source = source_trigrams("Summarize the story:\n" + STORY)
    assert first_repeat(ANSWER, source) == ANSWER.index("Three weeks earlier")
    assert cut_repeats(ANSWER, source).endswith("with ninety seconds left.")
    assert first_repeat(ANSWER) is None  # without a source: nothing repeated, nothing cut
    retold = (
        "Ilse's grandfather died at Orsa. "
        "A man named Leopold Sarn says the Vargas do not own their land."
    )
    assert (
        first_repeat(retold, source) is None
    )  # its second sentence: 5 of 11 trigrams from the story


def test_a_copied_first_sentence_is_kept_so_an_answer_is_never_emptied() -> None:
    source = source_trigrams(STORY)
    first = STORY.split(". ")[0] + "."
    assert first_repeat(first + " Sarn wants the valley.", source) is None


def test_the_roles_own_earlier_answer_is_not_a_copy() -> None:
    """An update keeps its running summary; only the story's own sentences count as copies."""
    running = "Ilse's grandfather died at Orsa, where the family grew grapes for six generations."
    prompt = f"Story:\n{STORY}\nSummary so far:\n{running}"
    update = f"Ilse carries the deed. {running} Sarn wants the valley."
    assert first_repeat(update, source_trigrams(prompt)) == update.index("Ilse's grandfather")
    assert first_repeat(update, source_trigrams(prompt, own=running)) is None


def test_an_answer_opening_with_a_copy_is_told_from_one_opening_with_a_retelling() -> None:
    source = source_trigrams(STORY)
    assert opens_with_copy(STORY.split(". ", 1)[1], source)
    assert not opens_with_copy(ANSWER, source)  # its copy is the third sentence
    assert not opens_with_copy("Her grandfather died.", source)  # too short to call


def test_repeats_off_checks_copies_only() -> None:
    assert first_repeat(LIGHTHOUSE, frozenset(), repeats=False) is None
    assert first_repeat(ANSWER, source_trigrams(STORY), repeats=False) == ANSWER.index(
        "Three weeks"
    )


def test_a_cut_never_leaves_a_quotation_open() -> None:
    """The local model's answer on the lighthouse story quoted the ledger, and the stop cut
    inside the quotation, after 'fresh.': a quotation now belongs to its sentence."""
    ledger = (
        'The entries ran: "Wind SW, fresh. Gannets working off the Teeth. Lit 5.12 p.m." '
        "Most of it was weather."
    )
    source = source_trigrams(ledger)
    quoting = (
        'Amos kept a ledger. It has three lines: "Wind SW, fresh. Gannets working off the Teeth. '
        'Lit 5.12 p.m." Nell reads it.'
    )
    assert cut_repeats(quoting, source) == quoting  # 11 of its 15 trigrams copied: under 75%
    copying = (
        'Amos kept a ledger. The entries ran: "Wind SW, fresh. Gannets working off the Teeth." '
        "Nell reads it."
    )
    assert cut_repeats(copying, source) == "Amos kept a ledger."
    curly = (
        "Amos kept a ledger. It has three lines: \u201cWind SW, fresh. Gannets working off the "
        "Teeth.\u201d Nell reads it."
    )
    assert cut_repeats(curly, source) == curly
