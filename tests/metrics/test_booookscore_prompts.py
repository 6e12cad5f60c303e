"""The prompt files: M.4 verbatim, every error type demonstrated, examples that parse."""

from __future__ import annotations

import json
import re

import pytest

from metrics.booookscore.parse import LABELS, parse_answer, parse_batch_answer
from metrics.booookscore.prompt import BATCH_PROMPT, SENTENCE_PROMPT, load_template
from tests.conftest import missing_shared
from tests.metrics.conftest import REPO

SEED = REPO.parent / "shared" / "seeds" / "000_352ad2f06818d913.txt"


def _seed_m4() -> str:
    if not SEED.exists():
        missing_shared("seeds verbatim-prompt")
    text = SEED.read_text(encoding="utf-8").replace("\u00a0", " ")  # the HTML export's spaces
    return text[text.index("Given a book summary and a sentence") :].rstrip("\n")


def test_sentence_prompt_keeps_the_seed_verbatim() -> None:
    seed = _seed_m4()
    ours = SENTENCE_PROMPT.read_text(encoding="utf-8").rstrip("\n")
    head, tail = seed.split("---\n[Your summary]")
    assert ours.startswith(head)  # instructions, definitions, conditions, the seed's examples
    assert ours.endswith("---\n[Your summary]" + tail)  # the closing instruction, typo included


def test_batch_prompt_keeps_definitions_and_conditions_verbatim() -> None:
    seed = _seed_m4()
    start = seed.index("- Entity omission:")
    end = seed.index("If the given sentence involves confusion")
    assert seed[start:end] in BATCH_PROMPT.read_text(encoding="utf-8")


def _sentence_examples() -> list[str]:
    text = SENTENCE_PROMPT.read_text(encoding="utf-8")
    return re.findall(r"\[Example response\]\n(Questions: .*\nTypes: .*)", text)


def test_sentence_prompt_examples_cover_all_eight_types_and_parse() -> None:
    verdicts = [parse_answer(answer) for answer in _sentence_examples()]
    assert all(v.parsed for v in verdicts)
    shown = {t for v in verdicts for t in (v.types or ())}
    assert shown == set(LABELS)
    assert any(not v.confused for v in verdicts)


def test_batch_prompt_examples_cover_all_eight_types_and_parse() -> None:
    text = BATCH_PROMPT.read_text(encoding="utf-8").replace("{{", "{").replace("}}", "}")
    blocks = re.findall(
        r"\[Example sentences\]\n(.*?)\n\[Example response\]\n(\[.*?\n\])", text, re.DOTALL
    )
    assert len(blocks) == 3
    shown = set()
    for listing, answer in blocks:
        sentences = [re.sub(r"^\d+\. ", "", line) for line in listing.splitlines()]
        found, error = parse_batch_answer(answer, sentences)
        assert error == "" and len(found) == len(sentences) == len(json.loads(answer))
        assert all(v.parsed for v in found.values())
        shown |= {t for v in found.values() for t in (v.types or ())}
    assert shown == set(LABELS)


@pytest.mark.parametrize("path", [SENTENCE_PROMPT, BATCH_PROMPT])
def test_prompt_files_have_two_slots_and_end_with_the_target(path) -> None:  # type: ignore[no-untyped-def]
    template = load_template(None, path, "key")
    assert template.head.rstrip().endswith(("[Your summary]",))
    assert "[Your response]" in template.tail
