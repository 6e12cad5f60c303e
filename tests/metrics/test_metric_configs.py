"""conf/metrics/*.yaml name registered metrics and only their keyword-only parameters."""

from __future__ import annotations

import inspect

import pytest
import yaml

from tests.helpers.plugins import built_ins
from tests.metrics.conftest import REPO

METRICS = built_ins("metrics")

GROUP = REPO / "conf" / "metrics"


@pytest.mark.parametrize("path", sorted(GROUP.glob("*.yaml")), ids=lambda p: p.stem)
def test_metric_group_keys_are_keyword_parameters(path) -> None:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(path.read_text()) or {}
    data.pop("defaults", None)
    for name, params in data.items():
        assert name in METRICS, f"{path.name}: unknown metric {name}"
        signature = inspect.signature(METRICS[name].setup)
        keyword_only = {p.name for p in signature.parameters.values() if p.kind == p.KEYWORD_ONLY}
        assert set(params or {}) <= keyword_only, f"{path.name}: {set(params) - keyword_only}"
        for key, value in (params or {}).items():
            assert value == signature.parameters[key].default, f"{path.name}: {name}.{key}"


def test_paper_group_composes_booookscore_and_stats_and_is_the_default() -> None:
    paper = yaml.safe_load((GROUP / "paper.yaml").read_text())
    assert set(paper) == {"defaults"}, "paper repeats keys instead of composing the groups"
    from tests.runner.config.test_config import composed

    metrics = composed("metrics=paper", "metrics.booookscore.max_tokens=99")["metrics"]
    booookscore = yaml.safe_load((GROUP / "booookscore.yaml").read_text())["booookscore"]
    assert set(metrics) == {"booookscore", "stats"}
    assert metrics["booookscore"] == {**booookscore, "max_tokens": 99}
    config = yaml.safe_load((REPO / "conf" / "config.yaml").read_text())
    assert {"metrics": "paper"} in config["defaults"]


def test_composed_default_config_validates() -> None:
    from hydra import compose, initialize_config_dir

    from runner.config.run_config import build_run_config

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["metrics.booookscore.batch_size=5"])
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(cfg, resolve=True)
    config = build_run_config(raw)  # type: ignore[arg-type]
    assert set(config.metrics) == {"booookscore", "stats"}
    assert config.metrics["booookscore"]["batch_size"] == 5
