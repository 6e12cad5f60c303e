"""The embedded default model: a GGUF run in-process by llama.cpp, behind litellm.

It is a litellm custom provider (``local/<name>``), registered by the gateway when it first
imports litellm, so local calls go through the same gateway path as API calls: same cache,
accounting and traces. Only this module, ``runner/llm/scripted.py`` and
``runner/llm/providers.py`` import litellm, and the gateway loads them only when a call misses
the cache.

The weights come from ``runner/llm/local/weights.py``. Calls to one model are serialized under
a lock so llama.cpp keeps its KV cache and reuses a shared prompt prefix (seconds instead of
tens of seconds on long prompts).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ModelResponse

from runner.api.errors import ConfigError
from runner.llm.local import perf as local_perf
from runner.llm.local.stops import (
    Trigram,
    cut_repeats,
    opens_with_copy,
    source_trigrams,
    stop_processor,
)
from runner.llm.local.weights import DEFAULT_GGUF_SHA256, DEFAULT_GGUF_SIZE, default_gguf_path  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from llama_cpp import Llama

COPY_RETRIES = 2
"""With the copy stop, an answer sampled at temperature > 0 whose first sentence is a copy
(which the stop never cuts) is drawn again with the next seeds, up to this many times; the
last draw is kept. At temperature 0 another seed would give the same answer."""


def default_threads() -> int:
    """llama.cpp's threads when ``model.n_threads`` is unset: the cores this process may use.

    That is its CPU affinity (which ``taskset`` or a container's cpuset narrows), not the
    machine's count: more threads than cores makes llama.cpp's spinning threads stall.
    """
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


class _LoadedModel:
    """One llama.cpp model with the lock that serializes its calls."""

    def __init__(self, path: Path, n_ctx: int, n_threads: int | None) -> None:
        from llama_cpp import Llama

        self.lock = threading.Lock()
        threads = n_threads or default_threads()  # llama-cpp-python's default is half
        start = time.perf_counter()
        self.llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
            seed=0,
        )
        local_perf.add(load_s=time.perf_counter() - start)
        self.n_ctx = n_ctx

    def repeat_stopper(
        self, source: frozenset[Trigram], repeats: bool
    ) -> Callable[[Any, Any], Any]:
        """A logits processor ending the answer at a repeated or copied sentence.

        Copied means from ``source`` (``runner/llm/local/stops.py``).
        """
        llama = self.llama
        return stop_processor(
            lambda ids: llama.detokenize(ids).decode("utf-8", errors="ignore"),
            llama.token_eos(),
            source,
            repeats,
        )

    def measured(self, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run ``call`` and add llama.cpp's clocks to the process totals.

        The prompt-evaluation and generation clocks go to ``runner/llm/local/perf.py``; the
        caller holds ``lock``.
        """
        import llama_cpp

        context = self.llama._ctx.ctx
        llama_cpp.llama_perf_context_reset(context)
        out = call()
        perf = llama_cpp.llama_perf_context(context)
        local_perf.add(
            prompt_eval_s=perf.t_p_eval_ms / 1000,
            generation_s=perf.t_eval_ms / 1000,
            prompt_tokens=perf.n_p_eval,
            generated=perf.n_eval,
        )
        return out


class LocalProvider(CustomLLM):
    """litellm custom provider answering ``local/<name>`` with llama.cpp."""

    def __init__(self) -> None:
        """No model yet: the gateway registers each role's (``register``), loaded on first use."""
        super().__init__()
        self._specs: dict[str, tuple[Path, int, int | None]] = {}
        self._models: dict[str, _LoadedModel] = {}
        self._load_lock = threading.Lock()
        atexit.register(self.close)

    def register(self, name: str, path: Path, n_ctx: int, n_threads: int | None) -> None:
        """Declare which GGUF ``local/<name>`` runs (loaded lazily on first call)."""
        if self._specs.get(name) != (path, n_ctx, n_threads):
            self._specs[name] = (path, n_ctx, n_threads)
            old = self._models.pop(name, None)
            if old is not None:
                old.llama.close()

    def model(self, name: str) -> _LoadedModel:
        """The loaded model for ``name``, loading it on first use."""
        with self._load_lock:
            if name not in self._models:
                if name not in self._specs:
                    raise ConfigError(f"local model {name!r} is not registered; use model=local")
                self._models[name] = _LoadedModel(*self._specs[name])
            return self._models[name]

    def completion(
        self, model: str, messages: list[Any], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        """Run one chat completion; reports reused prefix tokens as cached_tokens."""
        params = dict(kwargs.get("optional_params") or {})
        loaded = self.model(model.split("/", 1)[-1])
        options = {
            k: params[k]
            for k in ("temperature", "top_p", "max_tokens", "stop", "seed", "repeat_penalty")
            if k in params
        }
        if (params.get("response_format") or {}).get("type") == "json_object":
            options["response_format"] = {"type": "json_object"}  # llama.cpp: a JSON grammar
        repeats = bool(params.get("stop_on_repeated_sentence"))
        source = frozenset[Trigram]()
        if params.get("stop_on_copied_sentence"):
            prompt = "\n".join(str(m.get("content") or "") for m in messages)
            source = source_trigrams(prompt, str(params.get("own_text") or ""))
        stops = repeats or bool(source)
        seed = int(options.get("seed") or 0)
        with loaded.lock:
            before = list(loaded.llama._input_ids)
            for attempt in range(
                1 + (COPY_RETRIES if source and options.get("temperature") else 0)
            ):
                if stops:  # a fresh processor per draw: it remembers where the answer starts
                    options["logits_processor"] = [loaded.repeat_stopper(source, repeats)]
                if attempt:  # another draw (the prompt is still in the KV cache: generation only)
                    options["seed"] = seed + attempt
                    local_perf.add(copy_retries=1)
                out = loaded.measured(lambda: _chat(loaded.llama, messages, options))
                text = out["choices"][0]["message"]["content"] or ""
                if stops:
                    out["choices"][0]["message"]["content"] = text = cut_repeats(
                        text, source, repeats
                    )
                if not (source and opens_with_copy(text, source)):
                    break
            after = list(loaded.llama._input_ids)
        usage = out["usage"]
        reused = _common_prefix(before, after[: usage["prompt_tokens"]])
        usage["prompt_tokens_details"] = {"cached_tokens": min(reused, usage["prompt_tokens"] - 1)}
        return ModelResponse(**out)

    def close(self) -> None:
        """Free llama.cpp explicitly (left to __del__ at exit it prints a traceback)."""
        for loaded in self._models.values():
            loaded.llama.close()
        self._models.clear()


def _chat(llama: Llama, messages: list[Any], options: dict[str, Any]) -> dict[str, Any]:
    """One chat completion as a plain dict (never streamed here, so never an iterator)."""
    return cast(dict[str, Any], llama.create_chat_completion(messages=messages, **options))


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):  # lengths differ: the prefix ends with the shorter
        if x != y:
            break
        n += 1
    return n


PROVIDER = LocalProvider()
