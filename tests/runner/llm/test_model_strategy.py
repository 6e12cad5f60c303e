"""Per-model strategy settings (conf/model_strategy/<model>_<strategy>.yaml): the embedded
model gets its demo sizes, every other model composes exactly the papers' settings.

The expected values are read straight from the YAML files with PyYAML, not from Hydra, so a
composition that drops, reorders or misses a file fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from runner.api.types import Message
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec
from tests.helpers.fake_server import FakeOpenAIServer

CONF = Path(__file__).resolve().parents[3] / "conf"
STRATEGIES = ("baseline", "hier", "incremental", "summit")


def _compose(*overrides: str) -> dict:
    with initialize_config_module(config_module="runner.conf", version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("model", ["claude", "gpt4", "openai_compatible"])
def test_api_models_compose_exactly_the_papers_settings(model: str, strategy: str) -> None:
    composed = _compose(f"model={model}", f"strategy={strategy}")
    assert composed["strategy"] == _yaml(CONF / "strategy" / f"{strategy}.yaml")
    assert composed["chunk"] == 2048 and composed["temperature"] is None
    assert "system_prompt" not in composed["model"] or composed["model"]["system_prompt"] is None


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_local_model_gets_its_file_on_top_of_the_strategy(strategy: str) -> None:
    local = _yaml(CONF / "model_strategy" / f"local_{strategy}.yaml")
    tuned, paper = local["strategy"], _yaml(CONF / "strategy" / f"{strategy}.yaml")
    whole = _compose("model=local", f"strategy={strategy}")
    assert tuned and set(tuned) <= set(paper)  # only keys the strategy has
    assert whole["strategy"] == {**paper, **tuned}
    assert any(paper[k] != v for k, v in tuned.items())  # the file changes something
    assert whole["chunk"] == local.get("chunk", 2048)  # a top-level key of the file applies too


def test_the_local_chunked_strategies_split_each_sample_story_in_several_chunks() -> None:
    """At the paper's 2048 a ~2,090-token story's second chunk would be a stub of ~100 tokens."""
    from runner.api.chunking import split_into_chunks
    from runner.data.loaders import load_documents

    for strategy in ("hier", "incremental"):
        chunk = _compose("model=local", f"strategy={strategy}")["chunk"]
        for doc in load_documents("sample"):
            sizes = [c.n_tokens for c in split_into_chunks(doc.text, chunk)]
            assert len(sizes) >= 2 and min(sizes) > 200, (strategy, doc.doc_id, sizes)


def test_a_command_line_value_beats_the_local_file_and_a_sweep_picks_per_job() -> None:
    composed = _compose(
        "model=local",
        "strategy=hier",
        "strategy.max_summary_len=900",
        "strategy.postprocess=remove_artifacts",
    )
    assert composed["strategy"]["max_summary_len"] == 900
    assert composed["strategy"]["postprocess"] == "remove_artifacts"
    assert _compose("model=local", "strategy=incremental")["strategy"]["name"] == "incremental"


def test_only_the_local_summarizer_carries_the_system_prompt() -> None:
    composed = _compose("model=local", "judge=local", "strategy=summit", "evaluator=local")
    local = _yaml(CONF / "model" / "local.yaml")["system_prompt"]
    assert composed["model"]["system_prompt"] == local and "copy" in local
    assert composed["judge"]["system_prompt"] is None
    assert composed["evaluator"]["system_prompt"] is None
    assert (
        "system_prompt" not in _compose("model=local", "strategy=summit")["evaluator"]
    )  # evaluator=same


def _gateway(url: str, system: str | None) -> Gateway:
    spec = ModelSpec(
        name="fake",
        model="openai/fake",
        api_base=url,
        context_window=8192,
        retry=RetryPolicy(max_attempts=1),
        system_prompt=system,
    )
    return Gateway(spec, CallLog(None, keep=True), None, role="model")


def test_the_system_prompt_goes_first_only_when_set_and_never_replaces_one() -> None:
    """Alone as the first message, or at the head of the request's own system message."""
    with FakeOpenAIServer() as server:
        _gateway(server.url, None).complete("Summarize.", max_tokens=3)
        _gateway(server.url, "Use your own words.").complete("Summarize.", max_tokens=3)
        _gateway(server.url, "Use your own words.").complete(
            [Message("system", "You are the evaluator."), Message("user", "Rate.")], max_tokens=3
        )
    plain, tuned, own = (r["messages"] for r in server.requests)
    assert plain == [{"role": "user", "content": "Summarize."}]
    assert tuned == [
        {"role": "system", "content": "Use your own words."},
        {"role": "user", "content": "Summarize."},
    ]
    assert (
        own[0] == {"role": "system", "content": "Use your own words.\n\nYou are the evaluator."}
        and len(own) == 2
    )
