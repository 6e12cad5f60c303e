"""G-Eval: logprob-weighted scores through the loopback server, the sampling fallback with a
scripted judge, steps fixed once per job, prompts and parameters checked in setup."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from metrics import geval
from metrics.geval import parse_score, setup
from metrics.geval.prompt import PROMPT_DIR
from runner.api.errors import ConfigError
from runner.api.types import Document, Message
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply
from tests.helpers.scripted_llm import calls_of, scripted_llm

SOURCE = Document("d1", "The council closed the river lock in May after a flood damaged its gates.")
SUMMARY = "A flood damaged the river lock's gates. The council closed the lock in May."
STEPS = "1. Read the source and the summary.\n2. Assign a score."
LOGPROBS = {  # the first score token's alternatives, per dimension label in the form
    "Coherence": {"4": math.log(0.6), "5": math.log(0.3), "3": math.log(0.1)},
    # fluency is 1-3: "4" is off the scale, so p(3)=0.5, p(2)=0.3 renormalize to 5/8, 3/8
    "Fluency (1-3)": {"3": math.log(0.5), "2": math.log(0.3), "4": math.log(0.2)},
}


def is_steps_request(text: str) -> bool:
    """The auto-CoT prompt ends with 'Evaluation Steps:'; the form ends with '- <label>:'."""
    return text.rstrip().endswith("Evaluation Steps:")


def label_of(text: str) -> str:
    """The dimension a form asks for: its last line is '- <label>:'."""
    return text.rstrip().rsplit("\n- ", 1)[1].rstrip(":")


def loopback_responder(request: dict[str, Any]) -> FakeReply:
    """Steps for a steps prompt; '4'/'3' with the scripted alternatives for a form."""
    text = "\n".join(str(m["content"]) for m in request["messages"])
    if is_steps_request(text):
        return FakeReply(STEPS)
    alternatives = LOGPROBS[label_of(text)]
    best = max(alternatives, key=alternatives.__getitem__)
    return FakeReply(best, top_logprobs=[alternatives])


def loopback_judge(url: str, cache: ResponseCache | None) -> Gateway:
    spec = ModelSpec(
        name="fake",
        model="openai/fake",
        api_base=url,
        context_window=8192,
        retry=RetryPolicy(max_attempts=1),
    )
    return Gateway(spec, CallLog(None, keep=True), cache, role="judge")


def test_probability_weighted_scores_from_logprobs_and_steps_made_once(tmp_path: Path) -> None:
    with FakeOpenAIServer(loopback_responder) as server:
        judge = loopback_judge(server.url, ResponseCache(tmp_path))
        metric = setup(judge, dimensions=["coherence", "fluency"])
        steps_requests = [
            r for r in server.requests if is_steps_request(r["messages"][-1]["content"])
        ]
        assert len(steps_requests) == 2 and all(r["temperature"] == 0.0 for r in steps_requests)
        first = metric.score(SOURCE, SUMMARY)
        second = metric.score(Document("d2", "Another source text."), "Another summary.")
        assert len(server.requests) == 2 + 2 * 2  # steps once per dimension, one form call each
        forms = server.requests[2:]
        assert all(r["logprobs"] is True and r["top_logprobs"] == 5 for r in forms)
        assert all(STEPS in r["messages"][-1]["content"] for r in forms)  # the same steps reused
    for result in (first, second):
        v = result.values
        assert v["coherence"] == pytest.approx(0.6 * 4 + 0.3 * 5 + 0.1 * 3)  # 4.2
        assert v["coherence_norm"] == pytest.approx((4.2 - 1) / 4)  # 0.8
        assert v["fluency"] == pytest.approx((3 * 0.5 + 2 * 0.3) / 0.8)  # 2.625
        assert v["fluency_norm"] == pytest.approx((2.625 - 1) / 2)  # 0.8125
        assert v["logprob_scored"] == 2 and v["unparsed_samples"] == 0
    art = first.artifacts["geval.json"]
    assert art["fluency"]["method"] == "logprobs"
    assert art["fluency"]["distribution"] == pytest.approx({"2": 0.375, "3": 0.625})
    assert art["fluency"]["mass"] == pytest.approx(0.8)
    assert first.artifacts["geval_steps.json"]["coherence"]["steps"] == STEPS
    assert first.artifacts["geval_steps.json"] == second.artifacts["geval_steps.json"]
    assert first.values["judge_calls"] == 2  # the steps calls belong to setup, not a document


def test_steps_come_from_the_gateway_cache_in_a_second_job(tmp_path: Path) -> None:
    with FakeOpenAIServer(loopback_responder) as server:
        setup(loopback_judge(server.url, ResponseCache(tmp_path)), dimensions=["coherence"])
        again = setup(loopback_judge(server.url, ResponseCache(tmp_path)), dimensions=["coherence"])
        assert len(server.requests) == 1
    assert again.steps["coherence"]["steps"] == STEPS


SAMPLES = ["4", "5", "- Coherence (1-5): 3", "I cannot rate this.", "9"]
"""Sample i's answer: 4, 5 and 3 parse (the echoed range is skipped); 'I cannot...' and 9
(off the 1-5 scale) do not. Mean of the parsed = 4.0, 2 unparsed."""


def sampling_script(messages: list[Message], options: dict[str, Any]) -> str:
    text = "\n".join(m.content for m in messages)
    if is_steps_request(text):
        return STEPS
    if label_of(text) == "Fluency (1-3)":
        return "3" if "damaged" in text else "1"  # a judge that reads the summary
    return SAMPLES[options["sample"] % len(SAMPLES)] if options["temperature"] else "4"


def test_sampling_fallback_means_the_parsed_samples_and_stops_probing() -> None:
    judge = scripted_llm(sampling_script, role="judge", name="claude-scripted", concurrency=3)
    metric = setup(judge, dimensions=["coherence", "fluency"], n_samples=5)
    first = metric.score(SOURCE, SUMMARY)
    v = first.values
    assert v["coherence"] == pytest.approx((4 + 5 + 3) / 3)
    assert v["coherence_norm"] == pytest.approx(0.75)
    assert v["fluency"] == 3.0 and v["fluency_norm"] == 1.0
    assert v["unparsed_samples"] == 2 and v["logprob_scored"] == 0
    assert v["judge_unparsed"] == 2
    samples = first.artifacts["geval.json"]["coherence"]["samples"]
    assert [s["score"] for s in samples] == [4.0, 5.0, 3.0, None, None]
    assert any("2 of 5 samples unparsed" in n for n in first.notes)
    calls = calls_of(judge)[2:]  # after the two steps calls
    probes = [o for _, o in calls if o["temperature"] == 0.0]
    assert len(probes) == 2  # one logprob attempt per dimension; the judge gave none
    sampled = [o for _, o in calls if o["temperature"] == 1.0]
    assert sorted(o["sample"] for o in sampled) == sorted(list(range(5)) * 2)
    assert v["judge_calls"] == 2 + 10
    before = len(calls_of(judge))
    metric.score(SOURCE, "The lock was damaged.")
    assert len(calls_of(judge)) - before == 10  # no more logprob probes once none came back
    form = next(
        m
        for m, _ in calls_of(judge)
        if not is_steps_request(m[-1].content) and label_of(m[-1].content) == "Coherence"
    )
    assert form[0].cache and SOURCE.text in form[0].content and SUMMARY in form[0].content
    assert "Evaluation Criteria" not in form[0].content  # the source is the shared prefix


def test_all_samples_unparsed_is_nan_with_a_note() -> None:
    judge = scripted_llm(
        lambda m, o: STEPS if is_steps_request(m[-1].content) else "good", role="judge"
    )
    result = setup(judge, dimensions=["relevance"], n_samples=3, top_logprobs=0).score(
        SOURCE, SUMMARY
    )
    assert math.isnan(result.values["relevance"]) and math.isnan(result.values["relevance_norm"])
    assert result.values["unparsed_samples"] == 3
    assert any("all 3 samples unparsed" in n for n in result.notes)


def test_without_a_source_only_fluency_is_scored() -> None:
    judge = scripted_llm(sampling_script, role="judge")
    metric = setup(judge, n_samples=2, top_logprobs=0)
    assert metric.headline == ("coherence", "consistency", "relevance", "fluency")
    before = len(calls_of(judge))
    result = metric.score(None, SUMMARY)
    assert result.values["fluency"] == 3.0
    for name in ("coherence", "consistency", "relevance"):
        assert math.isnan(result.values[name])
        assert any(n.startswith(f"geval: {name} needs the source") for n in result.notes)
    requests = calls_of(judge)[before:]
    assert len(requests) == 2 and all("Source Text" not in m[-1].content for m, _ in requests)


def test_fixed_steps_from_a_file_skip_generation_for_the_dimensions_listed(tmp_path: Path) -> None:
    judge = scripted_llm(sampling_script, role="judge")
    metric = setup(judge, steps="official")
    generated = [m for m, o in calls_of(judge) if is_steps_request(m[-1].content)]
    assert len(generated) == 1 and "Fluency (1-3)" in generated[0][-1].content
    assert metric.steps["coherence"]["steps"].startswith("1. Read the news article carefully")
    path = tmp_path / "steps.json"
    path.write_text('{"coherence": ["Read both.", "Score it."]}')
    fixed = setup(judge, dimensions=["coherence"], steps=str(path))
    assert fixed.steps["coherence"] == {"steps": "1. Read both.\n2. Score it.", "source": str(path)}


def test_parse_score_is_tolerant_but_never_guesses() -> None:
    assert parse_score(" 4", 1, 5) == (4.0, 1)
    assert parse_score("- Coherence (1-5): 2", 1, 5) == (2.0, 19)
    assert parse_score("Score: 4/5", 1, 5) == (4.0, 7)
    assert parse_score("3.5", 1, 5) == (3.5, 0)
    assert parse_score("0", 1, 5) is None and parse_score("4", 1, 3) is None
    assert parse_score("no number", 1, 5) is None


def test_setup_rejects_bad_parameters_and_prompts(tmp_path: Path) -> None:
    judge = scripted_llm(sampling_script, role="judge")
    with pytest.raises(ConfigError, match="unknown.*fluidity"):
        setup(judge, dimensions=["fluidity"])
    with pytest.raises(ConfigError, match="n_samples=0"):
        setup(judge, n_samples=0)
    with pytest.raises(ConfigError, match="top_logprobs"):
        setup(judge, top_logprobs=50)
    bad = tmp_path / "form.txt"
    bad.write_text((PROMPT_DIR / "form.txt").read_text().replace("{steps}", "{step}"))
    with pytest.raises(ConfigError, match=r"form\.txt: unknown slot \{step\}"):
        setup(judge, form_prompt_path=str(bad))
    bad.write_text("Rate {summary} on {criteria} as {dimension}, source {document}.")
    with pytest.raises(ConfigError, match=r"form\.txt lacks the slot \{steps\}"):
        setup(judge, form_prompt_path=str(bad))
    with pytest.raises(ConfigError, match="steps=nope.yaml does not exist"):
        setup(judge, steps="nope.yaml")
    assert len(calls_of(judge)) == 0  # every check runs before any steps call


@pytest.mark.parametrize("name", ["geval", "vagueness", "repetitiveness"])
def test_yaml_defaults_are_the_setup_defaults(name: str) -> None:
    import importlib
    import inspect

    path = Path(__file__).resolve().parents[2] / "conf" / "metrics" / f"{name}.yaml"
    params = yaml.safe_load(path.read_text())[name]
    signature = inspect.signature(importlib.import_module(f"metrics.{name}").setup)
    for key, value in params.items():
        assert signature.parameters[key].kind == inspect.Parameter.KEYWORD_ONLY
        assert value == signature.parameters[key].default, key
    assert geval.ROLES == ("judge",)


def test_the_weighted_token_is_the_parsed_score_not_an_echoed_range() -> None:
    from metrics.geval import weighted_score
    from runner.api.types import Completion

    tokens = ["(", "1", "-", "5", "):", " 4"]
    last = {" 4": math.log(0.5), " 5": math.log(0.25), "5": math.log(0.25)}
    top = [{t: 0.0} for t in tokens[:-1]] + [last]
    completion = Completion("(1-5): 4", 0, 0, 0.0, 0.0, False, "c", top_logprobs=tuple(top))
    found = weighted_score(completion, 1, 5)
    assert found is not None and found["score"] == pytest.approx(0.5 * 4 + 0.5 * 5)  # " 5"+"5"
    assert weighted_score(Completion("4", 0, 0, 0.0, 0.0, False, "c"), 1, 5) is None
