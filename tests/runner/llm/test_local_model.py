"""The real embedded model (llama.cpp on the CPU). Slow: deselect with -m 'not local_model'."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from runner.api.types import Message
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway, ModelSpec
from runner.llm.local import model as local_model
from tests.runner.test_app import run

pytestmark = pytest.mark.local_model

STORY = (
    "Mara kept the lighthouse on Gull Rock. One stormy night a fishing boat lost its way. "
    "Mara lit the old lamp by hand, and the boat followed the light safely into the harbour. "
    "The next morning the fishermen brought her bread and thanked her."
)


def test_bundled_gguf_is_assembled_and_verified() -> None:
    path = local_model.default_gguf_path()
    assert path.stat().st_size == local_model.DEFAULT_GGUF_SIZE
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 24):
            digest.update(block)
    assert digest.hexdigest() == local_model.DEFAULT_GGUF_SHA256


def test_local_model_answers_and_reuses_the_prompt_prefix() -> None:
    spec = ModelSpec(
        name="local", model="local/qwen2.5-coder-0.5b-instruct", n_ctx=2048, temperature=0.0
    )
    log = CallLog(None)
    gw = Gateway(spec, log, seed=0)
    assert gw.concurrency == 1 and gw.context_window == 2048
    shared = f"Story:\n{STORY}\n\nAnswer in one short sentence."
    first = gw.complete(
        [Message("user", f"{shared}\nQuestion: who kept the lighthouse?")], max_tokens=40
    )
    second = gw.complete(
        [Message("user", f"{shared}\nQuestion: what did the fishermen bring?")], max_tokens=40
    )
    assert first.text.strip() and second.text.strip()
    assert first.prompt_tokens > 50 and first.completion_tokens > 0
    assert second.cached_prompt_tokens > 40  # llama.cpp reused the shared prefix from its KV cache
    assert log.totals.calls == 2 and log.totals.cost_usd == 0


def test_default_run_on_the_embedded_model(tmp_path: Path, stores: dict[str, str]) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "gull-rock.txt").write_text(STORY, encoding="utf-8")
    items = [
        "data=dir",
        f"data.path={folder}",
        "metrics=stats",
        "chunk=512",
        "model.n_ctx=2048",
        "strategy.max_summary_len=120",
        *[f"{k}={v}" for k, v in stores.items()],
    ]
    result = run(items)
    assert result.summaries["gull-rock"].strip()
    assert result.totals.calls == 1 and result.system_metrics["stats/words"] > 0


def test_the_repeat_stop_ends_generation_inside_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every later sentence counted a repeat (OVERLAP 0), the answer must end after its
    first sentence: generation stopped early (few tokens, not max_tokens), not merely cut."""
    from runner.llm.local import stops as local_repeats

    ask = "Retell this story in five sentences:\n" + STORY
    spec = ModelSpec(
        name="local", model="local/qwen2.5-coder-0.5b-instruct", n_ctx=2048, temperature=0.0
    )
    free = Gateway(spec, CallLog(None), seed=0).complete(ask, max_tokens=200)
    monkeypatch.setattr(local_repeats, "OVERLAP", 0.0)
    stopped = Gateway(
        ModelSpec(**{**spec.__dict__, "stop_on_repeated_sentence": True}), CallLog(None), seed=0
    )
    answer = stopped.complete(ask, max_tokens=200)
    assert (
        len(local_repeats._SENTENCE_END.findall(free.text + " ")) >= 3
    )  # unstopped: several sentences
    assert answer.text and free.text.startswith(
        answer.text
    )  # the same first sentence, cut after it
    assert len(local_repeats._SENTENCE_END.findall(answer.text + " ")) == 1
    assert answer.completion_tokens < free.completion_tokens
    assert answer.finish_reason == "stop"


def test_the_copy_stop_ends_a_copied_answer_and_knows_the_roles_own_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asked to copy the story, the model copies it; with the copy stop the answer ends after
    its first sentence, inside llama.cpp. The role's answers for the same document (cached or
    not) reach the provider as its own text, outside the request and so the cache key."""
    from runner.llm.call_log import for_document

    ask = "Copy this text exactly, word for word:\n" + STORY
    spec = ModelSpec(
        name="local", model="local/qwen2.5-coder-0.5b-instruct", n_ctx=2048, temperature=0.0
    )
    free = Gateway(spec, CallLog(None), seed=0).complete(ask, max_tokens=120)
    seen: list[str] = []
    original = local_model.LocalProvider.completion

    def spy(self, model, messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((kwargs.get("optional_params") or {}).get("own_text"))
        return original(self, model, messages, *args, **kwargs)

    monkeypatch.setattr(local_model.LocalProvider, "completion", spy)
    log = CallLog(None, keep=True)
    stopped = Gateway(ModelSpec(**{**spec.__dict__, "stop_on_copied_sentence": True}), log, seed=0)
    with for_document("gull-rock"):
        answer = stopped.complete(ask, max_tokens=120)
        stopped.complete("In one sentence, who is Mara?", max_tokens=30)
    with for_document("other"):
        stopped.complete("In one sentence, what is a lighthouse?", max_tokens=30)
    assert free.text.count(".") >= 3 and "Mara lit the old lamp" in free.text  # unstopped: a copy
    assert answer.text == "Mara kept the lighthouse on Gull Rock."
    assert answer.completion_tokens < free.completion_tokens and answer.finish_reason == "stop"
    assert seen == ["", answer.text, ""]
    assert len(log.entries) == 3 and all("own_text" not in line["request"] for line in log.entries)


def test_a_sampled_answer_opening_with_a_copy_is_drawn_again_with_the_next_seeds() -> None:
    """Told to copy, the model copies on every draw: two more draws (counted), the last kept.
    At temperature 0 another seed gives the same answer, so there is none."""
    from runner.llm.local import perf as local_perf

    ask = "Copy this text exactly, word for word:\n" + STORY
    spec = ModelSpec(
        name="local",
        model="local/qwen2.5-coder-0.5b-instruct",
        n_ctx=2048,
        temperature=0.3,
        stop_on_copied_sentence=True,
    )
    local_perf.reset()
    sampled = Gateway(spec, CallLog(None), seed=0).complete(ask, max_tokens=60)
    assert local_perf.snapshot()["local/copy_retries"] == 2
    assert sampled.text.startswith(
        "Mara kept the lighthouse"
    )  # still a copy: the last draw is kept
    local_perf.reset()
    Gateway(ModelSpec(**{**spec.__dict__, "temperature": 0.0}), CallLog(None), seed=0).complete(
        ask, max_tokens=60
    )
    assert local_perf.snapshot()["local/copy_retries"] == 0
    local_perf.reset()


def test_llama_cpps_clocks_count_this_jobs_calls() -> None:
    """The time/local_* values: llama.cpp's own prompt and generation counts must match the
    tokens the answer reports (prompt tokens evaluated = those not reused from the KV cache)."""
    from runner.llm.local import perf as local_perf

    local_perf.reset()
    gw = Gateway(
        ModelSpec(
            name="local", model="local/qwen2.5-coder-0.5b-instruct", n_ctx=2048, temperature=0.0
        ),
        CallLog(None),
        seed=0,
    )
    answer = gw.complete("In one sentence: " + STORY, max_tokens=40)
    values = local_perf.snapshot()
    assert values["time/local_prompt_eval_s"] > 0 and values["time/local_generation_s"] > 0
    assert (
        values["local/prompt_tokens_evaluated"]
        == answer.prompt_tokens - answer.cached_prompt_tokens
    )
    assert (
        abs(values["local/generated_tokens"] - answer.completion_tokens) <= 1
    )  # the end token is sampled, not counted
    local_perf.reset()
    assert local_perf.snapshot() == {}
