"""Every YAML in conf/ composes, and its keys match the function or dataclass it names."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runner.api.errors import ConfigError
from runner.config.run_config import build_run_config
from runner.llm.spec import ModelSpec
from tests.helpers.plugins import built_ins

METRICS = built_ins("metrics")
STRATEGIES = built_ins("strategy")


CONF = Path(__file__).resolve().parents[3] / "conf"


def composed(*overrides: str) -> dict[str, Any]:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    return raw


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def keyword_params(fn: Any) -> set[str]:
    return {p.name for p in inspect.signature(fn).parameters.values() if p.kind == p.KEYWORD_ONLY}


@pytest.mark.parametrize("option", [o for o in options("strategy") if o != "precomputed"])
def test_strategy_yaml_keys_are_the_function_parameters(option: str) -> None:
    block = dict(composed(f"strategy={option}")["strategy"])
    name = block.pop("name")
    assert name == option and name in STRATEGIES
    assert set(block) == keyword_params(STRATEGIES[name].summarize)


@pytest.mark.parametrize("option", options("metrics"))
def test_metrics_yaml_names_registered_metrics_with_their_parameters(option: str) -> None:
    block = composed(f"metrics={option}")["metrics"] or {}
    for metric, params in block.items():
        assert metric in METRICS
        assert set(params or {}) <= keyword_params(METRICS[metric].setup)


@pytest.mark.parametrize("group", ["model", "judge", "evaluator"])
def test_model_yamls_are_model_specs(group: str) -> None:
    known = {f.name for f in fields(ModelSpec)}
    for option in options(group):
        block = composed(f"{group}={option}")[group]
        assert set(block) <= known, option
        assert block["name"] == (option if option != "same" else "local")


@pytest.mark.parametrize("model", ["local", "claude", "openai_compatible"])
def test_the_default_evaluator_is_the_summarizers_model_at_temperature_0(model: str) -> None:
    raw = composed(f"model={model}", "strategy=summit", "model.concurrency=3")
    config = build_run_config(raw)
    evaluator, summarizer = config.roles["evaluator"], config.roles["model"]
    assert evaluator.model == summarizer.model and evaluator.api_base == summarizer.api_base
    assert evaluator.concurrency == 3 and evaluator.temperature == 0.0


@pytest.mark.parametrize("option", options("data"))
def test_every_data_option_composes(option: str) -> None:
    assert composed(f"data={option}")["data"]["source"] == option


def test_defaults_build_a_valid_run_config() -> None:
    config = build_run_config(composed())
    assert config.strategy == "baseline" and config.roles["model"].is_local and config.chunk == 2048
    assert set(config.roles) == {"model", "judge"}  # baseline's model, booookscore's judge
    assert config.tracking_uri.startswith("sqlite:///") and config.tracking_uri.endswith(
        "mlruns/mlflow.db"
    )


def test_paper_defaults_for_temperature() -> None:
    assert composed("model=gpt4")["model"]["temperature"] == 0.5
    assert composed("model=claude")["model"]["temperature"] == 1.0
    config = build_run_config(composed("model=claude", "temperature=0.2"))
    assert config.temperature == 0.2 and config.roles["model"].temperature == 1.0


@pytest.mark.parametrize(
    "override,message",
    [
        ("chunk=0", "chunk=0 must be a positive"),
        ("chunk=-5", "chunk=-5 must be a positive"),
        ("temperature=7", "temperature=7"),
        ("+strategy.bogus=1", "strategy.bogus is not a parameter of strategy 'baseline'"),
        ("+model.bogus=1", "model.bogus is not a model setting"),
    ],
)
def test_bad_values_are_config_errors(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_run_config(composed(override))


def test_unknown_strategy_name_lists_the_available_ones() -> None:
    raw = composed()
    raw["strategy"]["name"] = "nope"
    with pytest.raises(ConfigError, match="strategy=nope is unknown; .*available: .*baseline"):
        build_run_config(raw)


def test_old_precomputed_spelling_names_the_new_one() -> None:
    raw = composed("strategy=precomputed", "strategy.summaries=/x/s.json", "data=none")
    with pytest.raises(ConfigError, match="use strategy=none data=summaries data.path=/x/s.json"):
        build_run_config(raw)


@pytest.mark.parametrize("items", [["data=summaries", "data.path=s.json"], ["strategy=none"]])
def test_summaries_data_and_strategy_none_go_together(items: list[str]) -> None:
    with pytest.raises(ConfigError, match="data=summaries .* goes with strategy=none"):
        build_run_config(composed(*items))


def test_only_the_roles_a_job_uses_are_built() -> None:
    assert set(build_run_config(composed("metrics=stats")).roles) == {"model"}
    raw = composed("strategy=none", "data=summaries", "data.path=s.json", "metrics=paper")
    assert set(build_run_config(raw).roles) == {"judge"}


def test_a_role_nothing_asks_is_a_line_and_a_panels_judge_keys_are_asked() -> None:
    """``judge.*`` with only unjudged metrics is a line (the single job refuses it, a sweep's
    cell notes it: tests/test_bad_input.py); with a judged metric, or a panel, it is used."""
    items = ("judge.samples=3", "judge.temperature=0.7", "metrics=stats")
    unasked = build_run_config(composed(*items), items).unasked
    assert [line.split(" has no effect")[0] for line in unasked] == list(items[:2])
    judged = ("judge.samples=3", "metrics=booookscore")
    assert build_run_config(composed(*judged), judged).unasked == ()
    assert (
        build_run_config(composed("model.temperature=0.2"), ("model.temperature=0.2",)).unasked
        == ()
    )
