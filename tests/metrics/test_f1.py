"""F1 / F-beta of alignment and coverage: the math, and composing without paying twice."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import yaml

from metrics import alignment, coverage, f1
from metrics.f1 import f_beta
from runner.api.errors import ConfigError
from runner.api.types import Document
from runner.llm.cache import ResponseCache
from tests.helpers.scripted_llm import scripted_llm
from tests.metrics.article_judge import SENTENCES, SOURCE, reasonable
from tests.metrics.conftest import REPO

DOC = Document("bakery", SOURCE)
SUMMARY = SENTENCES[0] + " Marta Vance sold the bakery to a bank in 2010."


def judge(cache=None):  # type: ignore[no-untyped-def]
    return scripted_llm(reasonable, name="claude-scripted", role="judge", cache=cache)


@pytest.mark.parametrize(
    ("p", "r", "beta", "expected"),
    [
        (0.8, 0.5, 1.0, 2 * 0.4 / 1.3),  # 0.615384...
        (0.8, 0.5, 2.0, 5 * 0.4 / (4 * 0.8 + 0.5)),  # 0.540540...
        (0.8, 0.5, 0.5, 1.25 * 0.4 / (0.25 * 0.8 + 0.5)),  # 0.714285...
        (1.0, 1.0, 1.0, 1.0),
        (0.0, 0.0, 1.0, 0.0),
        (1.0, 0.0, 1.0, 0.0),
    ],
)
def test_f_beta_matches_hand_computed_values(
    p: float, r: float, beta: float, expected: float
) -> None:
    assert f_beta(p, r, beta) == pytest.approx(expected)


def test_f_beta_is_nan_when_either_side_is() -> None:
    assert math.isnan(f_beta(math.nan, 0.5)) and math.isnan(f_beta(0.5, math.nan))


def test_f1_combines_its_own_alignment_and_coverage() -> None:
    result = f1.setup(judge(), n_questions=6).score(DOC, SUMMARY)
    v = result.values
    assert v["alignment"] == pytest.approx(1 / 2)  # one true claim, one contradicted
    assert v["coverage"] == pytest.approx(1 / 6)
    assert v["f1"] == pytest.approx(2 * 0.5 * (1 / 6) / (0.5 + 1 / 6))  # 0.25
    assert v["judge_calls"] == (1 + 2) + (1 + 6 + 1)  # claims+verdicts, questions+answers+1 score
    assert set(result.artifacts) == {"alignment.json", "coverage.json"}
    assert f1.setup(judge()).headline == ("f1",)


def test_beta_other_than_one_is_reported_as_f_beta() -> None:
    metric = f1.setup(judge(), n_questions=6, beta=2.0)
    v = metric.score(DOC, SUMMARY).values
    assert metric.headline == ("f_beta",) and "f1" not in v
    assert v["f_beta"] == pytest.approx(5 * 0.5 * (1 / 6) / (4 * 0.5 + 1 / 6))


def test_no_source_gives_nan_with_a_note() -> None:
    result = f1.setup(judge()).score(None, SUMMARY)
    assert math.isnan(result.values["f1"]) and any("f1: NaN" in n for n in result.notes)


def test_composed_with_alignment_and_coverage_f1_pays_no_judge_call_twice(tmp_path: Path) -> None:
    gateway = judge(cache=ResponseCache(tmp_path))
    a = alignment.setup(gateway).score(DOC, SUMMARY)
    c = coverage.setup(gateway).score(DOC, SUMMARY)
    paid = len(gateway.call_log.entries)
    both = f1.setup(gateway).score(DOC, SUMMARY)
    again = gateway.call_log.entries[paid:]
    assert len(again) == paid and all(
        e["cached"] for e in again
    )  # same requests, all from the cache
    assert both.values["alignment"] == a.values["alignment"]
    assert both.values["coverage"] == c.values["coverage"]
    assert both.artifacts["coverage.json"] == c.artifacts["coverage.json"]


def test_without_a_response_cache_composing_pays_twice() -> None:  # why the default cache matters
    gateway = judge()
    alignment.setup(gateway).score(DOC, SUMMARY)
    paid = len(gateway.call_log.entries)
    f1.setup(gateway).score(DOC, SUMMARY)
    assert not any(e["cached"] for e in gateway.call_log.entries[paid:])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("beta", 0),
        ("beta", -1.0),
        ("beta", math.inf),
        ("n_questions", 0),
        ("chunk_tokens", 0),
        ("max_tokens", 0),
    ],
)
def test_bad_settings_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"metrics.f1.{key}"):
        f1.setup(judge(), **{key: value})  # type: ignore[arg-type]


def test_yaml_matches_setup_defaults_and_covers_both_metrics() -> None:
    data = yaml.safe_load((REPO / "conf" / "metrics" / "f1.yaml").read_text())["f1"]
    params = {
        k: p.default
        for k, p in inspect.signature(f1.setup).parameters.items()
        if p.kind == p.KEYWORD_ONLY
    }
    assert data == params
    for module in (alignment, coverage):
        own = {
            k: p.default
            for k, p in inspect.signature(module.setup).parameters.items()
            if k != "judge"
        }
        assert own.items() <= params.items()  # same names, same defaults: composed requests match
