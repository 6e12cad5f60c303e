"""ROUGE-1/2/L F1 against references: hand-computed answers, stemming, several references, none."""

from __future__ import annotations

import inspect
import math
import socket
import sys

import pytest
import yaml

from metrics import rouge
from runner.api.errors import ConfigError
from runner.api.types import Document, MetricResult
from tests.metrics.conftest import REPO


def doc(*references: str) -> Document:
    return Document("d", "The source text is not used by ROUGE.", references)


def test_known_answer_by_hand() -> None:
    # reference: the cat sat on the mat (6 tokens, 5 bigrams); candidate: the cat sat (3, 2).
    # ROUGE-1: 3 matches, P = 3/3, R = 3/6, F = 2PR/(P+R) = 2/3.
    # ROUGE-2: the-cat, cat-sat match: P = 2/2, R = 2/5, F = 0.8/1.4 = 4/7.
    # ROUGE-L: LCS "the cat sat" = 3: P = 1, R = 1/2, F = 2/3.
    result = rouge.setup().score(doc("the cat sat on the mat"), "the cat sat")
    assert result.values == pytest.approx(
        {"rouge1": 2 / 3, "rouge2": 4 / 7, "rougeL": 2 / 3, "references": 1.0}
    )
    assert result.notes == ()


def test_case_and_punctuation_are_ignored() -> None:
    result = rouge.setup().score(doc("The cat, sat!"), "the CAT sat.")
    assert result.values["rouge1"] == result.values["rouge2"] == result.values["rougeL"] == 1.0


def test_stemming_matches_inflections() -> None:
    # Porter: "runs" -> "run", "running" -> "run" (words of 3 letters or fewer are not stemmed).
    reference, candidate = doc("the dog runs"), "the dog running"
    assert rouge.setup().score(reference, candidate).values["rouge1"] == 1.0
    plain = rouge.setup(use_stemmer=False).score(reference, candidate).values
    assert plain["rouge1"] == pytest.approx(2 / 3)  # P = R = 2/3
    assert plain["rouge2"] == pytest.approx(1 / 2)  # the-dog of 2 bigrams each


def test_several_references_take_the_max_f1_of_each_type_separately() -> None:
    # candidate "a b c d" against A = "d c b a": R1 F = 1, R2 F = 0, LCS 1 -> F = 1/4;
    # against B = "a b x y z w": R1 2/4 and 2/6 -> F = 0.4; R2 1/3 and 1/5 -> F = 0.25;
    # LCS "a b" -> F = 0.4. Max per type: R1 from A, R2 and RL from B.
    result = rouge.setup().score(doc("d c b a", "a b x y z w"), "a b c d")
    assert result.values == pytest.approx(
        {"rouge1": 1.0, "rouge2": 0.25, "rougeL": 0.4, "references": 2.0}
    )


def test_no_references_give_nan_a_note_and_a_run_warning() -> None:
    metric = rouge.setup()
    results = {"a": metric.score(doc(), "a summary"), "b": metric.score(None, "a summary")}
    for result in results.values():
        assert all(math.isnan(result.values[t]) for t in ("rouge1", "rouge2", "rougeL"))
        assert result.notes and result.notes[0].startswith(
            "rouge: skipped: the data has no reference summaries "
            "(give them with data=dir data.references="
        )
    (warning,) = metric.warnings(results)
    assert "no document had reference summaries" in warning
    assert math.isnan(metric.reduce(results)["rouge1"])


def test_some_references_warn_nothing_and_reduce_over_the_scored() -> None:
    metric = rouge.setup()
    results: dict[str, MetricResult] = {
        "a": metric.score(doc("the cat sat on the mat"), "the cat sat"),
        "b": metric.score(doc(), "the cat sat"),
    }
    assert metric.warnings(results) == []
    assert metric.reduce(results)["rouge1"] == pytest.approx(2 / 3)


def test_chosen_types_only() -> None:
    result = rouge.setup(rouge_types=["rougeL"]).score(doc("the cat sat"), "the cat")
    assert set(result.values) == {"rougeL", "references"}


@pytest.mark.parametrize("types", [[], ["rouge0"], ["bleu"], ["rougeLsumx"]])
def test_bad_types_are_a_config_error(types: list[str]) -> None:
    with pytest.raises(ConfigError, match="metrics.rouge.rouge_types"):
        rouge.setup(rouge_types=types)


def test_missing_package_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rouge_score", None)
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[reference\]'"):
        rouge.setup()


def test_scoring_downloads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network or download attempted")

    monkeypatch.setattr(nltk, "download", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    result = rouge.setup().score(doc("Runners were running quickly."), "A runner runs quickly.")
    assert 0 < result.values["rouge1"] < 1


def test_yaml_matches_setup_defaults() -> None:
    block = yaml.safe_load((REPO / "conf" / "metrics" / "rouge.yaml").read_text())["rouge"]
    parameters = inspect.signature(rouge.setup).parameters
    assert {k: parameters[k].default for k in block} == block
    assert rouge.ROLES == ()


def test_importing_the_module_imports_neither_rouge_score_nor_nltk() -> None:
    import subprocess

    code = "import sys, metrics.rouge; print(sorted({'rouge_score', 'nltk'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "[]", done.stderr[-2000:]
