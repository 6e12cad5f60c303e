"""A source longer than the judge's window: each claim is judged against passages for it.

The story is forty paragraphs of filler, each naming one animal; the judge's window holds a
fraction of it. A claim about the zebra must be shown the paragraph that names the zebra
(found here by searching the text), not the whole story, and its passages (chunk indices,
best first) must be logged in claims.json and on the claim's verdict.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import metrics.faithfulness as faithfulness
from runner.api import ConfigError, Document, Message, ScoreInput, split_into_chunks
from tests.helpers.scripted_llm import calls_of, scripted_llm

ANIMALS = [f"animal{i:02d}" for i in range(40)]
ANIMALS[17] = "zebra"
ANIMALS[31] = "heron"
STORY = "\n\n".join(
    f"In the {i}th chapter the {name} walked along the quiet road past the old mill, "
    "and the villagers talked about the weather, the harvest and the price of bread "
    "while the children played by the river until the evening bells rang."
    for i, name in enumerate(ANIMALS)
)
CHUNK_TOKENS = 80


def _answer(messages: list[Message], options: dict[str, Any]) -> str:
    return "True"


def _metric(window: int) -> Any:
    judge = scripted_llm(_answer, context_window=window, role="judge")
    metric = faithfulness.setup(
        judge, method="claims", room_tokens=0, max_tokens=10, chunk_tokens=CHUNK_TOKENS
    )
    return judge, metric


def test_a_long_story_gives_each_claim_the_passages_that_name_it() -> None:
    judge, metric = _metric(window=700)
    claims = ("The zebra walked along the road.", "The heron walked past the mill.")
    result = metric.score_input(
        ScoreInput(Document("book", STORY), "A summary.", "book", {"claims": claims})
    )
    rows = result.artifacts["claims.json"]
    chunks = split_into_chunks(STORY, CHUNK_TOKENS)
    for row, animal in zip(rows, ("zebra", "heron"), strict=True):
        holding = [c.index for c in chunks if animal in c.text]
        assert isinstance(row["passages"], list) and row["passages"]
        assert row["passages"][0] in holding  # the best passage names the claim's animal
    sent = {messages[-1].content: messages for messages, _ in calls_of(judge)}
    for claim, animal in zip(claims, ("zebra", "heron"), strict=True):
        messages = next(m for last, m in sent.items() if claim in last)
        shown = "".join(m.content for m in messages[:-1])
        assert animal in shown and STORY not in shown
        assert len(shown) < len(STORY) / 2  # passages, not the story
    assert any("BM25" in note for note in result.notes)
    verdicts = [v for v in metric.verdicts(result) if v.name == "faithfulness/claim"]
    assert [json.loads(v.metadata["passages"]) for v in verdicts] == [r["passages"] for r in rows]


def test_a_story_that_fits_is_shown_whole() -> None:
    judge, metric = _metric(window=100_000)
    given = {"claims": ("The zebra walked.",)}
    result = metric.score_input(ScoreInput(Document("book", STORY), "A summary.", "book", given))
    assert result.artifacts["claims.json"][0]["passages"] == "whole"
    ((messages, _),) = calls_of(judge)
    assert STORY in "".join(m.content for m in messages)


@pytest.mark.parametrize("retrieval", ["embedder", "tfidf"])
def test_a_retriever_other_than_bm25_is_one_line(retrieval: str) -> None:
    judge = scripted_llm(_answer, role="judge")
    with pytest.raises(ConfigError) as caught:
        faithfulness.setup(judge, method="claims", retrieval=retrieval)
    message = str(caught.value)
    assert "\n" not in message and f"retrieval={retrieval}" in message and "bm25" in message


def test_a_window_too_small_for_the_prompt_is_one_line() -> None:
    judge = scripted_llm(_answer, context_window=300, role="judge")
    with pytest.raises(ConfigError) as caught:
        faithfulness.setup(judge, method="claims")
    assert "\n" not in str(caught.value) and "context_window=300" in str(caught.value)
