"""Alignment with a reasonable scripted judge: faithful summaries, false claims, long sources."""

from __future__ import annotations

import inspect
import json
import math
import threading
from pathlib import Path

import pytest
import yaml

from metrics import alignment
from runner.api.chunking import split_into_chunks
from runner.api.errors import ConfigError
from runner.api.retrieval import BM25, JOIN_COST, SEPARATOR, pick_chunks
from runner.api.text import count_tokens
from runner.api.types import Chunk, Document, Message
from tests.helpers.scripted_llm import calls_of, scripted_llm
from tests.metrics.article_judge import SENTENCES, SOURCE, reasonable, verdict
from tests.metrics.conftest import REPO

DOC = Document("bakery", SOURCE)
FALSE = "Marta Vance sold the bakery to a bank in 2010."
NAMES = [
    "Quillon",
    "Ardent",
    "Brisa",
    "Corvel",
    "Dunmore",
    "Elswick",
    "Fennick",
    "Garrow",
    "Hollin",
    "Ivers",
]
GOODS = ["amber", "copper", "salt", "wool", "timber", "glass", "honey", "silk", "tin", "marble"]
FILLER = "The days were long and the work in the town was steady and quiet. " * 22


def long_source(paragraphs: int = 10) -> str:
    """Paragraphs of ~340 tokens, each with one distinctive sentence first."""
    return "\n\n".join(
        f"The harbour of {name} exported {good} to the northern islands. {FILLER.strip()}"
        for name, good in list(zip(NAMES, GOODS, strict=True))[:paragraphs]
    )


def judge(concurrency: int = 8, context_window: int = 8192, script=reasonable):  # type: ignore[no-untyped-def]
    return scripted_llm(
        script,
        context_window=context_window,
        concurrency=concurrency,
        name="claude-scripted",
        role="judge",
    )


def test_a_summary_equal_to_its_source_scores_one() -> None:  # DeepEval issue #565
    result = alignment.setup(judge()).score(DOC, SOURCE)
    v = result.values
    assert v["alignment"] == 1.0
    assert (v["claims"], v["supported"], v["unparsed_claims"]) == (6, 6, 0)
    assert [row["claim"] for row in result.artifacts["alignment.json"]] == SENTENCES
    assert all(row["evidence_chunks"] is None for row in result.artifacts["alignment.json"])
    assert v["judge_calls"] == 7  # one extraction, six verdicts


def test_an_injected_false_claim_lowers_alignment() -> None:
    v = (
        alignment.setup(judge())
        .score(DOC, SOURCE + " " + FALSE + " Penguins fly over volcanoes.")
        .values
    )
    assert v["alignment"] == pytest.approx(6 / 8)
    assert (v["supported"], v["contradicted"], v["unknown"]) == (6, 1, 1)


def test_each_claim_is_judged_against_the_source_itself_with_the_prefix_cached() -> None:
    gateway = judge()
    alignment.setup(gateway).score(DOC, SENTENCES[1])
    (extract, _), (ask, options) = calls_of(gateway)
    assert options["purpose"] == "alignment.verdict"
    assert options["temperature"] == gateway.temperature == 0.5  # the judge's own
    assert ask[0].cache and ask[0].content.endswith("Source text:\n" + SOURCE)
    assert not ask[1].cache and ask[1].content.startswith("Claim:\n" + SENTENCES[1])
    assert extract[0].content.count(SENTENCES[1]) == 1 and SENTENCES[0] not in extract[0].content


def test_long_source_bm25_shows_the_chunk_holding_the_claim() -> None:
    source = long_source()
    gateway = judge(context_window=1500)
    metric = alignment.setup(gateway, max_tokens=200, room_tokens=100, chunk_tokens=300)
    claims = [
        f"The harbour of {NAMES[7]} exported {GOODS[7]} to the northern islands.",
        f"The harbour of {NAMES[2]} exported {GOODS[2]} to the northern islands.",
    ]
    assert count_tokens(source) > 2 * 1500
    result = metric.score(Document("long", source), " ".join(claims))
    chunks = split_into_chunks(source, 300)
    rows = result.artifacts["alignment.json"]
    for row, name in zip(rows, (NAMES[7], NAMES[2]), strict=True):
        holding = [c.index for c in chunks if name in c.text]
        assert len(holding) == 1 and row["evidence_chunks"][0] == holding[0]
        assert 1 < len(row["evidence_chunks"]) < len(chunks)
    assert result.values["alignment"] == 1.0  # the judge saw the claim's own sentence
    for messages, options in calls_of(gateway)[1:]:
        assert sum(count_tokens(m.content) for m in messages) + options["max_tokens"] <= 1500


def test_bm25_ranks_the_rare_terms_chunk_first_and_picks_what_fits() -> None:
    texts = ["the cat sat on the mat", "the dog ate the amber bone", "the the the cat"]
    index = BM25(texts)
    assert index.rank("amber bone")[0] == 1
    assert index.rank("cat")[:2] == [0, 2] or index.rank("cat")[:2] == [2, 0]
    assert index.scores("zebra") == [0.0, 0.0, 0.0]
    chunks = [Chunk(0, "a", 50), Chunk(1, "b", 30), Chunk(2, "c", 10)]
    assert pick_chunks(chunks, [0, 1, 2], 70) == [0, 2]  # 1 overflows, 2 still fits
    assert count_tokens(SEPARATOR) + 1 <= JOIN_COST


def test_an_unparsable_verdict_is_counted_and_excluded() -> None:
    def script(messages: list[Message], options: dict) -> str:
        if options["purpose"] == "alignment.verdict" and "fire" in messages[1].content:
            return "I would rather not say."
        return reasonable(messages, options)

    result = alignment.setup(judge(script=script), max_attempts=2).score(DOC, SOURCE + " " + FALSE)
    v = result.values
    assert (v["claims"], v["unparsed_claims"], v["supported"]) == (7, 1, 5)
    assert v["alignment"] == pytest.approx(5 / 6)
    assert v["judge_unparsed"] == 1 and v["judge_reasks"] == 1 and v["judge_calls"] == 1 + 7 + 1
    bad = [r for r in result.artifacts["alignment.json"] if r["verdict"] is None]
    assert bad[0]["unparsed"] and "fire" in bad[0]["claim"] and result.notes


def test_unreadable_claims_or_no_source_give_nan_with_a_note() -> None:
    v = alignment.setup(judge(script=lambda m, o: "no")).score(DOC, SOURCE)
    assert v.values["alignment"] != v.values["alignment"] and "claims unreadable" in v.notes[0]
    none = alignment.setup(judge()).score(None, SOURCE)
    assert none.values["alignment"] != none.values["alignment"] and none.values["judge_calls"] == 0


def test_claim_verdicts_overlap_with_concurrency_eight() -> None:
    barrier = threading.Barrier(5, timeout=5)

    def script(messages: list[Message], options: dict) -> str:
        if options["purpose"] == "alignment.verdict" and SENTENCES[0] not in messages[1].content:
            barrier.wait()  # the five later claims in flight at once, or this times out
        return (
            verdict(messages)
            if options["purpose"] == "alignment.verdict"
            else reasonable(messages, options)
        )

    assert (
        alignment.setup(judge(concurrency=8, script=script)).score(DOC, SOURCE).values["alignment"]
        == 1.0
    )


def test_a_user_prompt_without_a_slot_is_a_one_line_config_error(tmp_path: Path) -> None:
    prompt = tmp_path / "verdict.txt"
    prompt.write_text("Judge {{strictly}}.\nSOURCE:\n{source}\nAnswer in JSON.\n")
    with pytest.raises(ConfigError, match=r"verdict.txt lacks the slot \{claim\}") as err:
        alignment.setup(judge(), verdict_prompt_path=str(prompt))
    assert "\n" not in str(err.value)
    prompt.write_text("CLAIM {claim} before SOURCE {source}")
    with pytest.raises(ConfigError, match="must come before"):
        alignment.setup(judge(), verdict_prompt_path=str(prompt))


def test_a_custom_prompt_is_used_with_literal_braces(tmp_path: Path) -> None:
    prompt = tmp_path / "verdict.txt"
    prompt.write_text(
        'Say {{"verdict": ...}}.\nSource text:\n{source}\n\nClaim:\n{claim}\n\nJSON:\n'
    )
    gateway = judge()
    assert (
        alignment.setup(gateway, verdict_prompt_path=str(prompt))
        .score(DOC, SENTENCES[2])
        .values["alignment"]
        == 1.0
    )
    assert calls_of(gateway)[1][0][0].content.startswith('Say {"verdict": ...}.')


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_attempts", 0),
        ("max_tokens", 0),
        ("chunk_tokens", 3),
        ("temperature", -1),
        ("room_tokens", -5),
        ("room_tokens", 9000),
    ],
)
def test_bad_settings_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match="metrics.alignment"):
        alignment.setup(judge(), **{key: value})  # type: ignore[arg-type]


def test_yaml_matches_setup_defaults_and_artifact_is_json() -> None:
    data = yaml.safe_load((REPO / "conf" / "metrics" / "alignment.yaml").read_text())["alignment"]
    signature = inspect.signature(alignment.setup)
    assert data == {
        k: p.default for k, p in signature.parameters.items() if p.kind == p.KEYWORD_ONLY
    }
    assert alignment.ROLES == ("judge",) and alignment.Alignment.headline == ("alignment",)
    json.dumps(alignment.setup(judge()).score(DOC, SOURCE).artifacts)


def test_claims_the_judge_invents_are_left_out_and_counted() -> None:
    """A small judge copied its prompt's example; those claims are not the summary's."""
    from runner.api.claims import grounded

    summary = "Marta Vance founded the Harbor Lantern bakery in 1998."
    assert grounded("Marta Vance founded the Harbor Lantern bakery in 1998.", summary)
    assert grounded("The Harbor Lantern bakery was founded by Marta Vance.", summary)
    assert not grounded("Marie Curie won the Nobel Prize in Physics in 1903.", summary)


def test_a_judge_that_only_invents_claims_gives_nan_not_a_score() -> None:
    import json as _json

    from metrics import alignment as _alignment
    from runner.api.types import Document as _Document
    from tests.helpers.scripted_llm import calls_of, scripted_llm

    example = {
        "claims": [
            "Marie Curie won the Nobel Prize in Physics in 1903.",
            "Marie Curie was born in Warsaw.",
        ]
    }
    judge = scripted_llm(
        lambda messages, options: _json.dumps(example), role="judge", temperature=0.0
    )
    result = _alignment.setup(judge).score(
        _Document("d", "Marta Vance founded a bakery."), "Marta Vance founded a bakery."
    )
    assert math.isnan(result.values["alignment"]) and result.values["invented_claims"] == 2
    assert "not in the summary" in result.notes[0]
    assert [options["purpose"] for _, options in calls_of(judge)] == [
        "alignment.claims"
    ]  # nothing judged
