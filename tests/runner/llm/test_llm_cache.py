from __future__ import annotations

import copy
from pathlib import Path

import pytest

from runner.llm.cache import ResponseCache, cache_key

BASE = {
    "model": "openai/x",
    "model_file": None,
    "api_base": "http://127.0.0.1:1/v1",
    "messages": [{"role": "user", "content": "hello"}],
    "temperature": 0.5,
    "top_p": 1.0,
    "max_tokens": 100,
    "seed": 0,
    "stop": None,
    "response_format": None,
    "sample": 0,
}


@pytest.mark.parametrize(
    "field,value",
    [
        ("model", "openai/y"),
        ("model_file", "/other.gguf"),
        ("api_base", "http://127.0.0.1:2/v1"),
        ("messages", [{"role": "user", "content": "hello!"}]),
        ("temperature", 1.0),
        ("top_p", 0.9),
        ("max_tokens", 101),
        ("seed", 1),
        ("stop", ["\n"]),
        ("response_format", {"type": "json_object"}),
        ("sample", 1),
    ],
)
def test_every_request_field_changes_the_key(field: str, value: object) -> None:
    changed = copy.deepcopy(BASE)
    changed[field] = value
    assert cache_key(changed) != cache_key(BASE)


def test_key_ignores_dict_order() -> None:
    reordered = dict(reversed(list(BASE.items())))
    assert cache_key(reordered) == cache_key(BASE)


def test_round_trip_and_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key(BASE)
    assert cache.get(key) is None
    cache.put(key, {"text": "hi", "prompt_tokens": 3})
    assert ResponseCache(tmp_path).get(key) == {"text": "hi", "prompt_tokens": 3}
    assert not list(tmp_path.rglob("*.tmp"))  # written atomically, no leftovers


def test_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key(BASE)
    cache.put(key, {"text": "hi"})
    next(tmp_path.rglob("*.json")).write_text("{broken")
    assert cache.get(key) is None
