"""A scripted judge for the alignment / coverage / F1 tests that behaves like a reasonable one.

Its answers are derived from what each request shows it, never from the test's expectations,
so the tests measure the metrics' logic (which text reaches the judge, how answers combine):

- claims: the summary's sentences;
- verdict: "yes" when the claim's words appear, in order, in the source text it was shown;
  "no" when most of its words do but not the claim (a distortion); "idk" otherwise;
- questions: one per distinct sentence of the text it was shown, up to the n asked, keyed
  by the sentence's first four words; the sentence is the reference answer; importance 5
  for the text's first sentence, 2 for the others;
- answer: the summary sentence holding the question's key words, else "idk";
- score: 5 x the share of the reference answer's words found in the summary's answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from runner.api.text import split_sentences, words
from runner.api.types import Message

SOURCE = (
    "Marta Vance founded the Harbor Lantern bakery in 1998. "
    "The bakery sold rye bread to sailors every morning. "
    "A fire destroyed the old oven during the winter of 2004. "
    "Local fishermen raised money to rebuild the kitchen. "
    "The new oven doubled the daily output of loaves. "
    "Today the bakery employs twelve people from the village."
)
SENTENCES = split_sentences(SOURCE)


def between(text: str, start: str, end: str = "\n\nJSON:") -> str:
    """The text between two markers of a default prompt."""
    found = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.DOTALL)
    assert found, f"{start!r} not in {text[:200]!r}"
    return found.group(1).strip()


def joined(text: str) -> str:
    """Words joined by single spaces, padded, for containment tests on word boundaries."""
    return " " + " ".join(words(text)) + " "


def key_words(sentence: str) -> str:
    """The words that identify a sentence in a question."""
    return " ".join(words(sentence)[:4])


def claims(messages: list[Message]) -> str:
    return json.dumps({"claims": split_sentences(between(messages[0].content, "Text:\n"))})


def verdict(messages: list[Message]) -> str:
    source = messages[0].content.split("Source text:\n", 1)[1]
    claim = between(messages[1].content, "Claim:\n")
    shared = set(words(claim)) & set(words(source))
    if joined(claim) in joined(source):
        answer = "yes"
    else:
        answer = "no" if len(shared) >= 0.6 * len(set(words(claim))) else "idk"
    return json.dumps({"verdict": answer, "reason": "checked against the text shown"})


def questions(messages: list[Message]) -> str:
    n = int(re.search(r"generate a list of (\d+) questions", messages[0].content).group(1))  # type: ignore[union-attr]
    distinct = list(dict.fromkeys(split_sentences(between(messages[0].content, "Text:\n"))))[:n]
    items = [
        {
            "question": f"What is said about '{key_words(s)}'?",
            "answer": s,
            "importance": 5 if i == 0 else 2,
        }
        for i, s in enumerate(distinct)
    ]
    return json.dumps({"questions": items})


def answer(messages: list[Message]) -> str:
    summary = messages[0].content.split("Text:\n", 1)[1]
    key = re.search(r"'(.*)'", messages[1].content).group(1)  # type: ignore[union-attr]
    hits = [s for s in split_sentences(summary) if joined(s).startswith(" " + key + " ")]
    return json.dumps({"answer": hits[0] if hits else "idk"})


def score(messages: list[Message]) -> str:
    pair = json.loads(messages[0].content.rsplit("\n\n", 2)[-2])  # the slot before "JSON:"
    reference = set(words(pair["original_answer"]))
    found = len(reference & set(words(pair["summary_answer"]))) / len(reference)
    return json.dumps({"score": round(5 * found), "reason": "word overlap with the reference"})


BY_PURPOSE: dict[str, Callable[[list[Message]], str]] = {
    "alignment.claims": claims,
    "alignment.verdict": verdict,
    "coverage.questions": questions,
    "coverage.answer": answer,
    "coverage.score": score,
}


def reasonable(messages: list[Message], options: dict[str, Any]) -> str:
    """The script: dispatch on the call's purpose label."""
    return BY_PURPOSE[options["purpose"]](messages)
