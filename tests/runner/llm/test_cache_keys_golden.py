"""The response cache's keys, pinned: a cache on disk written by earlier versions still hits.

The literals were computed by the gateway before its request and its cache key were
separated (``runner/llm/request.py``); a change to either that moves a key makes every
researcher's cache miss and every call be paid again. Each case fills the cache under the
pinned key and asks the gateway: it must be served from there, without a model call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.api.types import Message
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.spec import ModelSpec

API = ModelSpec(name="gpt", model="openai/gpt-4o-mini", context_window=128000, temperature=0.5)
CLAUDE = ModelSpec(
    name="claude",
    model="anthropic/claude-sonnet-4-5-20250929",
    api_key_env="ANTHROPIC_API_KEY",
    context_window=200000,
    max_tokens=1024,
)
SERVER = ModelSpec(
    name="vllm", model="openai/qwen", api_base="http://127.0.0.1:9/v1", context_window=32768
)
LOCAL = ModelSpec(
    name="local",
    model="local/qwen2.5-0.5b",
    temperature=0.0,
    repeat_penalty=1.1,
    stop_on_repeated_sentence=True,
    stop_on_copied_sentence=True,
    system_prompt="You summarize stories.",
)
LOCAL_PLAIN = ModelSpec(name="local", model="local/qwen2.5-0.5b", temperature=0.5)
BARE_CLAUDE = ModelSpec(name="haiku", model="claude-3-5-haiku-20241022", context_window=200000)
PROMPT = [Message("user", "Summarize: the lighthouse keeper's last night.")]
CACHED = [Message("system", "Long instructions.", cache=True), Message("user", "The story.")]

CASES: list[tuple[str, ModelSpec, dict[str, Any], dict[str, Any], str]] = [
    (
        "plain API model",
        API,
        {},
        {"max_tokens": 200},
        "9721b90b278fd26bc9f2add4b5d938420ae2259faf41dd19ac4060c8d8d8fbc1",
    ),
    (
        "API model, seeded",
        API,
        {"seed": 7},
        {},
        "19d0a54b7b8fe67faf4a5491170a4693070f66563a4a7a7e90c7489fedc31dbf",
    ),
    (
        "sample > 0 with a seed",
        API,
        {"seed": 7},
        {"sample": 3, "temperature": 1.0},
        "44e6756befb94107dcdf2f55fb7418fa62ececc1ad0ebd2488347e2e58a563ba",
    ),
    (
        "repeat index",
        API,
        {"seed": 8, "repeat": 1},
        {},
        "9e2e5d677d0438506cceea9667f9a08f47e9d1a22a2226764e02e717e38465db",
    ),
    (
        "stop and JSON",
        API,
        {},
        {"stop": ["\n\n"], "response_format": {"type": "json_object"}},
        "1ba4174d4af3b1bb928554d80bb1a97d83043431cf78c4021144d026eb6d4361",
    ),
    (
        "top logprobs",
        API,
        {},
        {"max_tokens": 1, "top_logprobs": 5},
        "dc8730f894a28da9b826787ea6b9972b5063b44dc7208e5009c054a32cba952c",
    ),
    (
        "Anthropic cache mark",
        CLAUDE,
        {},
        {"messages": CACHED},
        "6f63b4679a3903951175769dfa86821612cecbd549471df29793fa911a7623ad",
    ),
    (
        "claude without a prefix",
        BARE_CLAUDE,
        {},
        {"messages": CACHED},
        "5af8c7d9bcfea6579e3bf88a11c00939b10d9ae369f90b077324d763ebdd86d2",
    ),
    (
        "server model",
        SERVER,
        {"role": "judge", "temperature": 0.0},
        {"messages": CACHED},
        "0430430a1fbc2f6691cf11f7016bb8f935fe78fb9e52140467d0c54c87fc0340",
    ),
    (
        "local model, flags and system prompt",
        LOCAL,
        {"seed": 1},
        {"messages": CACHED},
        "78478e6c787a0732148ce151b415a8e15ae7c75f17caa665bc4717320290719f",
    ),
    (
        "local model, plain",
        LOCAL_PLAIN,
        {},
        {},
        "59bde34ba74f5d68f3ea030740f0f2b123147e16406752f49f1b9251a4a08432",
    ),
]


class SeenKeys(ResponseCache):
    """A cache that remembers the keys it was asked for and answers every one (no call)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.asked: list[str] = []

    def get(self, key: str) -> dict[str, Any] | None:
        self.asked.append(key)
        return {"text": "from the old cache", "prompt_tokens": 3, "completion_tokens": 4}


@pytest.mark.parametrize(
    ("spec", "gateway_kw", "call_kw", "key"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_requests_keep_their_cache_keys(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spec: ModelSpec,
    gateway_kw: dict[str, Any],
    call_kw: dict[str, Any],
    key: str,
) -> None:
    monkeypatch.setattr(
        "runner.llm.local.weights.default_gguf_path", lambda: Path("/models/qwen.gguf")
    )
    cache = SeenKeys(tmp_path / "cache")
    messages = call_kw.pop("messages", PROMPT)
    out = Gateway(spec, CallLog(None), cache, **gateway_kw).complete(messages, **call_kw)
    assert cache.asked == [key]
    assert out.cached and out.text == "from the old cache"
