"""Local coherence: hand-computed cosines on the loopback server, the article's shuffle check
with the embedded MiniLM, and the undecidable cases."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from metrics import coherence
from runner.api.errors import ConfigError
from runner.api.text import split_sentences
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.llm.test_local_embedder import require_weights

# Letter counts (the fake server's letter_embedder): a3b3, z3, a3, b3z6, so the gap-2 pairs are
# cos(a3b3, a3) = 9 / (sqrt(18) * 3) = 1/sqrt(2), cos(z3, b3z6) = 18 / (3 * sqrt(45)) = 2/sqrt(5).
LETTERS = "Aaa bbb. Zzz. Aaa. Bbb zzz zzz."
PARAGRAPH = " ".join(
    [
        "In the spring of 1838 the first settlers crossed the frozen Mississippi River with oxen",
        "and wagons. The river ice groaned under the wagons, and two families lost their oxen to",
        "the cold current. On the far bank of the river the settlers dragged their wagons up the",
        "steep muddy bluff. From the top of the bluff they watched the ice on the river break",
        "apart a week later. That summer a trader opened a store that sold flour, salt, coffee",
        "and gunpowder to the settlers. The store's trader bought beaver furs from trappers and",
        "paid for them in flour and coffee. Each fall the trader shipped the furs downriver and",
        "came back with more goods for the store. By the third year the store had a rival, and",
        "the two traders cut their prices on salt and flour.",
    ]
)
"""Two topics of four sentences each (the crossing, the store): in order, four of the six
gap-2 pairs stay within a topic; shuffled, about three in seven do."""


class Recorder:
    """An embedder that must not be called (the metric decides without vectors)."""

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], *, purpose: str = "") -> list[list[float]]:
        """Record the call and answer with unit vectors."""
        self.calls.append(list(texts))
        return [[1.0, 0.0] for _ in texts]


def _fake_gateway(url: str, tmp_path: Path) -> Gateway:
    spec = ModelSpec(
        name="fake",
        model="openai/fake",
        api_base=url,
        context_window=8192,
        retry=RetryPolicy(max_attempts=1),
    )
    return Gateway(spec, CallLog(None, keep=True), ResponseCache(tmp_path), role="embedder")


def _local_gateway(tmp_path: Path) -> Gateway:
    spec = ModelSpec(name="local", model="local-embed/all-minilm-l6-v2", concurrency=1)
    return Gateway(spec, CallLog(None, keep=True), ResponseCache(tmp_path), role="embedder")


def test_known_answer_on_the_loopback_server(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        gateway = _fake_gateway(server.url, tmp_path)
        result = coherence.setup(gateway).score(None, LETTERS)
        assert [r["input"] for r in server.requests] == [
            split_sentences(LETTERS)
        ]  # one call, all sentences
    assert len(split_sentences(LETTERS)) == 4
    expected = (1 / math.sqrt(2) + 2 / math.sqrt(5)) / 2
    assert result.values["coherence"] == pytest.approx(expected, abs=1e-12)
    assert result.values["pairs"] == 2
    pairs = result.artifacts["coherence.json"]
    assert [(p["i"], p["j"]) for p in pairs] == [(0, 2), (1, 3)]
    assert [p["similarity"] for p in pairs] == pytest.approx([1 / math.sqrt(2), 2 / math.sqrt(5)])
    assert result.notes == ()
    assert {e["purpose"] for e in gateway.call_log.entries} == {"coherence"}


def test_gap_one_compares_neighbours(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        result = coherence.setup(_fake_gateway(server.url, tmp_path), gap=1).score(None, LETTERS)
    # cos(a3b3, z3) = 0, cos(z3, a3) = 0, cos(a3, b3z6) = 0
    assert result.values == {"coherence": 0.0, "pairs": 3.0}


def test_a_sentence_without_letters_is_left_out_with_a_note(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        result = coherence.setup(_fake_gateway(server.url, tmp_path)).score(
            None, "Aaa bbb. 1, 2, 3! Aaa. Bbb zzz zzz."
        )
    assert result.values["coherence"] == pytest.approx(1 / math.sqrt(2))
    assert result.values["pairs"] == 1
    assert result.artifacts["coherence.json"][1]["similarity"] is None
    json.dumps(result.artifacts, allow_nan=False)  # the artifact stays valid JSON
    assert result.notes and "1 of 2 pairs" in result.notes[0]


def test_too_few_sentences_is_nan_with_a_note_and_no_call() -> None:
    embedder = Recorder()
    result = coherence.setup(embedder).score(
        None, "The settlers crossed the river. They built a town."
    )
    assert math.isnan(result.values["coherence"]) and result.values["pairs"] == 0
    assert result.notes == ("coherence: the summary has 2 sentences; needs at least 3",)
    assert embedder.calls == []


@pytest.mark.parametrize("gap", [0, -2, 2.0, "2", True, None])
def test_a_bad_gap_is_a_one_line_config_error(gap: object) -> None:
    with pytest.raises(ConfigError, match="metrics.coherence.gap=") as info:
        coherence.setup(Recorder(), gap=gap)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_minilm_ordered_paragraph_beats_its_shuffles(tmp_path: Path) -> None:
    """The article's sanity check: shuffling a coherent summary lowers its score."""
    require_weights()
    metric = coherence.setup(_local_gateway(tmp_path))
    sentences = split_sentences(PARAGRAPH)
    assert len(sentences) == 8
    ordered = metric.score(None, PARAGRAPH).values["coherence"]
    rng = random.Random(0)
    shuffled: list[float] = []
    while len(shuffled) < 6:
        order = rng.sample(sentences, len(sentences))
        if order != sentences:
            shuffled.append(metric.score(None, " ".join(order)).values["coherence"])
    assert 0 < ordered < 1
    assert ordered > sum(shuffled) / len(shuffled)
    two = metric.score(None, " ".join(sentences[:2]))
    assert math.isnan(two.values["coherence"])
    assert two.notes == ("coherence: the summary has 2 sentences; needs at least 3",)


def test_coherence_is_skipped_with_one_notice_when_the_embedder_cannot_run() -> None:
    class Absent:
        name = "local"

        def missing_extra(self) -> str:
            return "the local embedder needs its weights package"

        def embed(self, texts, *, purpose=""):  # noqa: ANN001, ANN202
            raise AssertionError("a skipped metric must not embed")

    metric = coherence.setup(Absent())
    result = metric.score(None, "One. Two. Three. Four.")
    assert math.isnan(result.values["coherence"])
    assert result.notes == ("coherence: skipped: the local embedder needs its weights package",)
    assert metric.warnings({"a": result, "b": result}) == list(result.notes)
