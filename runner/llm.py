"""The gateway: the one door to language models.

Every strategy and metric calls ``Gateway.complete``; only this module calls
``litellm.completion``. It adds what litellm leaves to the caller: a persistent response
cache keyed by the whole request, bounded retries with backoff, a per-model concurrency
limit shared by the whole process, and accounting of every call (tokens, cost, latency,
cache hits) written to ``calls.jsonl``.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

import logging  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import itertools  # noqa: E402
import uuid  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any
from collections.abc import Sequence  # noqa: E402

import litellm  # noqa: E402

from runner import local_model  # noqa: E402
from runner.call_log import CallLog  # noqa: E402
from runner.errors import AuthError, ConfigError, LLMError  # noqa: E402
from runner.llm_cache import ResponseCache, cache_key  # noqa: E402
from runner.llm_errors import translate  # noqa: E402
from runner.retry import RetryPolicy  # noqa: E402
from runner.text import count_tokens  # noqa: E402
from runner.types import Completion, Message  # noqa: E402

litellm.suppress_debug_info = True
logging.getLogger("LiteLLM").setLevel(logging.WARNING)  # one INFO line per call otherwise
LOCAL_PREFIX = "local/"


@dataclass(frozen=True)
class ModelSpec:
    """A model as configured in ``conf/model/*.yaml``."""

    name: str
    """The config alias ('local', 'claude', ...), used in messages and run names."""
    model: str
    """litellm model string: 'anthropic/...', 'openai/...', or 'local/<name>'."""
    api_base: str | None = None
    """OpenAI-compatible server URL (vLLM, Ollama, llama.cpp server)."""
    api_key_env: str | None = None
    """Environment variable holding the key; the key itself never enters config or logs."""
    temperature: float | None = None
    """Default sampling temperature (the paper: 0.5; Claude 1.0)."""
    top_p: float | None = None
    """Nucleus sampling; the paper uses p=1."""
    max_tokens: int | None = None
    """Default cap on generated tokens when the caller gives none."""
    context_window: int | None = None
    """Input window in tokens; None = litellm's model info (or n_ctx for local)."""
    input_cost_per_token: float | None = None
    """USD price override for models litellm does not map."""
    output_cost_per_token: float | None = None
    """USD price override for generated tokens."""
    concurrency: int = 8
    """Calls in flight at once to this model, across the whole process."""
    timeout_s: float = 600.0
    """Per-attempt timeout."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """Retry policy for transient failures."""
    path: str | None = None
    """Local only: GGUF file (None = the bundled Qwen2.5-Coder-0.5B-Instruct)."""
    n_ctx: int = 8192
    """Local only: llama.cpp context size."""
    n_threads: int | None = None
    """Local only: CPU threads (None = llama.cpp's choice)."""

    @property
    def is_local(self) -> bool:
        """True for the in-process llama.cpp model."""
        return self.model.startswith(LOCAL_PREFIX)


_CALL_PREFIX = uuid.uuid4().hex[:12]  # one random draw per process; uuid4 per call costs ~0.5 ms here
_CALL_COUNTER = itertools.count(1)


def new_call_id() -> str:
    """Unique call id: a per-process random prefix and a counter."""
    return f"{_CALL_PREFIX}-{next(_CALL_COUNTER):06d}"


_SEMAPHORES: dict[tuple[str, str], threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def _semaphore(spec: ModelSpec) -> threading.BoundedSemaphore:
    """One limiter per (model, server), shared by every gateway in the process."""
    key = (spec.model, spec.api_base or "")
    with _SEMAPHORES_LOCK:
        if key not in _SEMAPHORES:
            limit = 1 if spec.is_local else max(1, spec.concurrency)
            _SEMAPHORES[key] = threading.BoundedSemaphore(limit)
        return _SEMAPHORES[key]


class Gateway:
    """A configured model: cache, retries, limits, accounting. Implements ``types.LLM``."""

    def __init__(
        self,
        spec: ModelSpec,
        calls: CallLog,
        cache: ResponseCache | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        role: str = "model",
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.calls = calls
        self.cache = cache
        self.seed = seed
        self.temperature = temperature if temperature is not None else spec.temperature
        self.role = role
        self._model_path = self._prepare_local() if spec.is_local else None
        self.context_window = self._context_window()
        self.concurrency = 1 if spec.is_local else max(1, spec.concurrency)

    def _prepare_local(self) -> str:
        path = local_model.default_gguf_path() if not self.spec.path else Path(_existing(self.spec.path))
        local_model.PROVIDER.register(
            self.spec.model[len(LOCAL_PREFIX) :], path, self.spec.n_ctx, self.spec.n_threads
        )
        return str(path)

    def _context_window(self) -> int:
        if self.spec.context_window:
            return int(self.spec.context_window)
        if self.spec.is_local:
            return self.spec.n_ctx
        try:
            info = litellm.get_model_info(self.spec.model)
        except Exception as err:
            raise ConfigError(
                f"{self.role}={self.name}: litellm does not know the context window of "
                f"{self.spec.model!r}; set {self.role}.context_window=<tokens>"
            ) from err
        return int(info.get("max_input_tokens") or info.get("max_tokens") or 4096)

    def check_ready(self) -> None:
        """Fail fast, before any work, when the API key is missing."""
        if self.spec.is_local or self.spec.api_base:
            return
        if self.spec.api_key_env:
            missing = [] if os.environ.get(self.spec.api_key_env) else [self.spec.api_key_env]
        else:
            missing = list(litellm.validate_environment(self.spec.model).get("missing_keys") or [])
        if missing:
            raise AuthError(
                f"{self.role}={self.name} needs {', '.join(missing)} in the environment; "
                f"export it, or use {self.role}=local"
            )

    def count_tokens(self, text: str) -> int:
        """Tokens in the project's tokenizer (cl100k_base), used for all budgets."""
        return count_tokens(text)

    def complete(
        self,
        messages: Sequence[Message] | str,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        sample: int = 0,
        purpose: str = "",
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion, served from the cache when the identical request was made."""
        request = self._request(messages, max_tokens, temperature, stop, sample, response_format)
        key = cache_key(request)
        stored = self.cache.get(key) if self.cache else None
        if stored is not None:
            completion = _completion(stored, cost=0.0, latency=0.0, cached=True)
        else:
            completion = self._call(request)
            if self.cache:
                self.cache.put(key, _stored(completion))
        self.calls.record(self, request, completion, purpose)
        return completion

    def _request(
        self,
        messages: Sequence[Message] | str,
        max_tokens: int | None,
        temperature: float | None,
        stop: Sequence[str] | None,
        sample: int,
        response_format: dict[str, Any] | None,
    ) -> dict[str, Any]:
        if isinstance(messages, str):
            messages = [Message("user", messages)]
        return {
            "model": self.spec.model,
            "model_file": self._model_path,
            "api_base": self.spec.api_base,
            "messages": [self._message(m) for m in messages],
            "temperature": temperature if temperature is not None else self.temperature,
            "top_p": self.spec.top_p,
            "max_tokens": max_tokens or self.spec.max_tokens,
            "seed": self.seed,
            "stop": list(stop) if stop else None,
            "response_format": response_format,
            "sample": sample,
        }

    def _message(self, m: Message) -> dict[str, Any]:
        """litellm's message form; a cache mark becomes Anthropic's cache_control block."""
        if m.cache and ("anthropic" in self.spec.model or "claude" in self.spec.model):
            block = {"type": "text", "text": m.content, "cache_control": {"type": "ephemeral"}}
            return {"role": m.role, "content": [block]}
        return {"role": m.role, "content": m.content}

    def _call(self, request: dict[str, Any]) -> Completion:
        kwargs = {k: v for k, v in request.items() if v is not None}
        kwargs.pop("sample", None)
        kwargs.pop("model_file", None)
        if self.spec.api_key_env and os.environ.get(self.spec.api_key_env):
            kwargs["api_key"] = os.environ[self.spec.api_key_env]
        elif self.spec.api_base:
            kwargs["api_key"] = "no-key"  # OpenAI-compatible servers often need none
        kwargs.update(timeout=self.spec.timeout_s, num_retries=0, max_retries=0, drop_params=True)
        start = time.perf_counter()
        with _semaphore(self.spec):
            response, attempts = self.spec.retry.run(lambda: self._attempt(kwargs))
        latency = time.perf_counter() - start
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "prompt_tokens_details", None)
        choice = response.choices[0]
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=self._cost(response, prompt_tokens, completion_tokens),
            latency_s=latency,
            cached=False,
            call_id=new_call_id(),
            finish_reason=str(choice.finish_reason or "stop"),
            cached_prompt_tokens=int(getattr(details, "cached_tokens", 0) or 0),
        )

    def _attempt(self, kwargs: dict[str, Any]) -> Any:
        try:
            return litellm.completion(**kwargs)
        except Exception as err:  # translated once, here, into runner.errors
            raise translate(err, self.role, self.spec.name, self.spec.api_base) from err

    def _cost(self, response: Any, prompt_tokens: int, completion_tokens: int) -> float:
        spec = self.spec
        if spec.input_cost_per_token is not None or spec.output_cost_per_token is not None:
            return (spec.input_cost_per_token or 0.0) * prompt_tokens + (
                spec.output_cost_per_token or 0.0
            ) * completion_tokens
        if spec.is_local:
            return 0.0  # litellm.completion_cost raises for custom providers
        hidden = getattr(response, "_hidden_params", None) or {}
        if hidden.get("response_cost") is not None:  # litellm priced it already: don't redo it
            return float(hidden["response_cost"])
        try:
            return float(litellm.completion_cost(completion_response=response))
        except Exception:  # unmapped model: cost unknown, reported as 0 (see README)
            return 0.0


def _existing(path: str) -> str:
    expanded = os.path.expanduser(path)
    if not os.path.isfile(expanded):
        raise ConfigError(f"model.path={path} does not exist; point it at a .gguf file")
    return expanded


def _stored(c: Completion) -> dict[str, Any]:
    return {
        "text": c.text,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "finish_reason": c.finish_reason,
        "cached_prompt_tokens": c.cached_prompt_tokens,
        "cost_usd": c.cost_usd,
    }


def _completion(stored: dict[str, Any], cost: float, latency: float, cached: bool) -> Completion:
    return Completion(
        text=stored["text"],
        prompt_tokens=stored["prompt_tokens"],
        completion_tokens=stored["completion_tokens"],
        cost_usd=cost,
        latency_s=latency,
        cached=cached,
        call_id=new_call_id(),
        finish_reason=stored.get("finish_reason", "stop"),
        cached_prompt_tokens=stored.get("cached_prompt_tokens", 0),
    )


__all__ = ["Gateway", "ModelSpec", "CallLog", "LLMError"]
