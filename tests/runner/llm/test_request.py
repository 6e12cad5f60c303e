"""A gateway request: what is sent to litellm, apart from what the response cache keys."""

from __future__ import annotations

import pytest

from runner.api.types import Message
from runner.llm.local.stops import OwnAnswers
from runner.llm.request import build_request, cache_fields
from runner.llm.spec import ModelSpec


@pytest.mark.parametrize(
    ("model", "claude"),
    [
        ("anthropic/claude-sonnet-4-5-20250929", True),
        ("claude-3-5-haiku-20241022", True),  # litellm resolves a bare Claude name to Anthropic
        ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", True),
        ("bedrock/us.anthropic.claude-3-5-haiku-20241022-v1:0", True),
        ("vertex_ai/claude-3-5-sonnet@20240620", True),
        ("openrouter/anthropic/claude-3.5-sonnet", True),
        ("openai/claude-3-5-sonnet", True),  # a Claude behind an OpenAI-compatible proxy
        ("openai/gpt-4o-mini", False),
        ("gpt-4o-mini", False),
        ("openai/anthropic-lookalike", False),  # the provider and the name decide, not a substring
        ("local/qwen2.5-coder-0.5b-instruct", False),
    ],
)
def test_a_cache_mark_becomes_anthropics_block_for_claude_models_only(
    model: str, claude: bool
) -> None:
    spec = ModelSpec(name="m", model=model)
    request = build_request(
        spec,
        [Message("system", "Long instructions.", cache=True), Message("user", "The story.")],
        temperature=None,
        max_tokens=None,
        stop=None,
        seed=None,
        sample=0,
        response_format=None,
    )
    head = request.messages[0]["content"]
    assert isinstance(head, list) is claude
    assert request.messages[1] == {"role": "user", "content": "The story."}


def test_what_only_the_cache_knows_is_never_sent() -> None:
    """The model file, sample and repeat index tell cache slots apart; litellm never sees them."""
    spec = ModelSpec(
        name="local", model="local/qwen", repeat_penalty=1.1, stop_on_copied_sentence=True
    )
    request = build_request(
        spec,
        "Summarize.",
        temperature=1.0,
        max_tokens=50,
        stop=None,
        seed=7,
        sample=2,
        response_format=None,
        top_logprobs=3,
    )
    sent = request.litellm_kwargs()
    keyed = cache_fields(request, model_file="/models/q.gguf", sample=2, repeat=1)
    assert not {"model_file", "sample", "repeat"} & set(sent)
    assert {"model_file": "/models/q.gguf", "sample": 2, "repeat": 1}.items() <= keyed.items()
    both = ("repeat_penalty", "stop_on_copied_sentence", "logprobs", "top_logprobs", "seed")
    assert all(sent[k] == keyed[k] for k in both)
    assert sent["seed"] != 7  # a sample > 0 has its own seed
    assert None not in sent.values() and keyed["api_base"] is None  # the key keeps its Nones


def test_own_answers_are_kept_per_document() -> None:
    own = OwnAnswers()
    own.add("a", "First.")
    own.add("b", "Other.")
    own.add("a", "Second.")
    assert (own.text("a"), own.text("b"), own.text(None)) == ("First.\nSecond.", "Other.", "")
