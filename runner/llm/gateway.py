"""The gateway: the one door to language models.

Every strategy and metric calls ``Gateway.complete``; only this module calls
``litellm.completion``. It adds what litellm leaves to the caller: a persistent response
cache keyed by the whole request, bounded retries with backoff, a concurrency limit per
endpoint owned by the job (``runner/llm/limits.py``), the provider's rate limits shared by a
sweep's jobs (``runner/llm/rate.py``), cancellation when the job stops, and accounting of
every call (tokens, cost, latency, cache hits) written to ``calls.jsonl``.

litellm costs about 5 s to import, so it is imported only when a call misses the cache
or a check needs it (a model's context window from litellm's map, a key litellm must
name): an identical rerun served from the cache never imports it.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.api.errors import AuthError, Cancelled, ConfigError, LLMError, RateLimitedError
from runner.api.text import count_tokens
from runner.api.types import Completion, Message
from runner.llm.batch import BATCH_FANOUT, BatchCollector, Batches
from runner.llm.cache import ResponseCache, cache_key
from runner.llm.call_log import DOCUMENT, CallLog
from runner.llm.completions import from_response, from_stored, to_stored
from runner.llm.endpoints import require_key
from runner.llm.limits import EndpointLimits
from runner.llm.local.stops import OwnAnswers
from runner.llm.provider_errors import check_answer, translate
from runner.llm.providers import load_litellm as _litellm
from runner.llm.request import Request, build_request, cache_fields, slot_seed
from runner.llm.spec import LOCAL_PREFIX, ModelSpec
from runner.llm.stop import Stop


class Gateway:
    """A configured model in one role: cache, retries, limits, accounting (``types.LLM``)."""

    def __init__(
        self,
        spec: ModelSpec,
        calls: CallLog,
        cache: ResponseCache | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        role: str = "model",
        limits: EndpointLimits | None = None,
        cancel: Stop | None = None,
        repeat: int = 0,
        batches: Batches | None = None,
    ) -> None:
        """Bind ``spec`` to ``role``; a local model's file and every context window resolve now.

        ``limits`` are the job's per-endpoint limits (a new set for this model alone when
        None); ``cancel`` stops further calls once set (a rejected key sets it); ``repeat``
        gives a repeated job its own cache slots; ``batches`` holds the job's batch
        collectors (``<role>.batch=true``).
        """
        self.spec = spec
        self.name = spec.name
        self.call_log = calls
        self.cache = cache
        self.seed = seed
        self.temperature = temperature if temperature is not None else spec.temperature
        self.role = role
        self.cancel = cancel if cancel is not None else Stop()
        self.repeat = repeat
        self.slot = 0
        """Which of the judge's repeated samples this is (``sampled``); 0: the only one."""
        limits = limits or EndpointLimits([spec])
        self.in_flight = limits.semaphore(spec)
        """The endpoint's concurrency limit, held by every call while it is in flight (the
        embedding half, ``runner/llm/embed.py``, holds it too)."""
        self._batch = (
            batches.collector(spec, role, self.api_key) if spec.batch and batches else None
        )
        self.concurrency = BATCH_FANOUT if self.batch else limits.limit(spec)
        budget = calls.budget
        self.rate = limits.rate(spec, budget.shared_dir if budget is not None else None)
        """The endpoint's provider limits (``model.rpm`` ...), None when unlimited."""
        self._model_path = self._local_path() if spec.is_local else None
        self._own = OwnAnswers() if spec.stop_on_copied_sentence else None
        """The copy stop's exemption: this role's own answers per document."""
        self.context_window = self._context_window()
        """This model's input window: known without litellm (``ModelSpec.known_window``), else
        litellm's (its import paid here only then)."""

    def sampled(self, slot: int) -> Gateway:
        """This role as its ``slot``-th repeated sample (``judge.samples``, from 1).

        The same model, limits, cache, batches and accounting; each request in a cache slot
        and with a seed of its own, so that K samples are K answers, never one cached answer
        seen K times, and a rerun finds each again.
        """
        twin = copy.copy(self)
        twin.slot = slot
        return twin

    @property
    def batch(self) -> bool:
        """True when a cache miss waits for a provider batch (``runner/llm/batch/``)."""
        return self._batch is not None

    @property
    def batch_collector(self) -> BatchCollector | None:
        """The collector this role's batched requests wait in (shared by roles on one model)."""
        return self._batch

    def _local_path(self) -> str:
        from runner.llm.local.weights import default_gguf_path

        return str(default_gguf_path() if not self.spec.path else Path(_existing(self.spec.path)))

    def _context_window(self) -> int:
        if self.spec.known_window:
            return self.spec.known_window
        try:
            info = _litellm().get_model_info(self.spec.model)
        except Exception as err:
            raise ConfigError(
                f"{self.role}={self.name}: litellm does not know the context window of "
                f"{self.spec.model!r}; set {self.role}.context_window=<tokens>"
            ) from err
        return int(info.get("max_input_tokens") or info.get("max_tokens") or 4096)

    def check_ready(self) -> None:
        """Fail fast, before any work: a key only litellm can name is missing.

        That is an API model that names neither its key variable nor a server. The checks
        that need no litellm (a named key variable set, a server answering) are the
        preflight's (``runner/run/preflight.py``), run once per job before this.
        """
        if self.spec.in_process or self.spec.api_base or self.spec.api_key_env:
            return
        missing = _litellm().validate_environment(self.spec.model).get("missing_keys") or []
        require_key(self.role, self.spec, list(missing))

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
        top_logprobs: int = 0,
    ) -> Completion:
        """One chat completion, served from the cache when the identical request was made."""
        if self.cancel.is_set():
            raise Cancelled(f"{self.role}={self.name}: the job was stopped before this call")
        request = build_request(
            self.spec,
            messages,
            temperature=temperature if temperature is not None else self.temperature,
            max_tokens=max_tokens,
            stop=stop,
            seed=slot_seed(self.seed, self.slot),
            sample=sample,
            response_format=response_format,
            top_logprobs=top_logprobs,
        )
        fields = cache_fields(
            request,
            model_file=self._model_path,
            sample=sample,
            repeat=self.repeat,
            judge_sample=self.slot,
        )
        key = cache_key(fields)
        stored = self.cache.get(key) if self.cache else None
        if stored is not None:
            completion = from_stored(stored, cost=0.0, latency=0.0, cached=True)
        elif self._batch is not None and self._batch.accepts(request):
            completion = self._batch.ask(key, request)  # its answer is in the cache already
        else:
            completion = self._online(key, request, sample, purpose)
        self.call_log.record(self.role, self.name, fields, completion, purpose)
        if self._own is not None:
            self._own.add(DOCUMENT.get(), completion.text)
        return completion

    def _online(self, key: str, request: Request, sample: int, purpose: str) -> Completion:
        """The answer from the provider, asked once even when threads send it at once.

        Under the cache's claim on ``key`` (``ResponseCache.claim``): a thread that waited
        for another's identical request finds its answer in the cache, as a cache hit.
        """
        if self.cache is None:
            return self._call(request, sample, purpose)
        with self.cache.claim(key):
            stored = self.cache.get(key)
            if stored is not None:
                return from_stored(stored, cost=0.0, latency=0.0, cached=True)
            completion = self._call(request, sample, purpose)
            self.cache.put(key, to_stored(completion))
            return completion

    def _call(self, request: Request, sample: int, purpose: str) -> Completion:
        kwargs = request.litellm_kwargs()
        if self.spec.in_process:  # a scripted model answers per sample and purpose
            kwargs["metadata"] = {"sample": sample, "purpose": purpose, "slot": self.slot}
        if self.call_log.budget is not None:
            self.call_log.budget.check()
        if self.spec.is_local:
            kwargs["model"] = self._register_local()
            if self._own is not None:  # not part of the request: the cache key holds the flag
                kwargs["own_text"] = self._own.text(DOCUMENT.get())
        _litellm()  # its ~5 s import is no attempt's: keep it off the retry deadline
        if self.api_key() is not None:
            kwargs["api_key"] = self.api_key()
        kwargs.update(timeout=self.spec.timeout_s, num_retries=0, max_retries=0, drop_params=True)
        start = time.perf_counter()
        with self.in_flight:
            if self.cancel.is_set():
                raise Cancelled(f"{self.role}={self.name}: the job was stopped before this call")
            response, _ = self.spec.retry.run(lambda: self._attempt(kwargs))
        return from_response(response, self.spec, time.perf_counter() - start)

    def refused(self, error: LLMError) -> None:
        """Stop the job at once when every later call would fail the same way (a rejected key).

        The threads waiting for this call's result may learn of it late (``runner/llm/stop.py``);
        until then the job's other threads would go on calling with the same key.
        """
        if isinstance(error, AuthError):
            self.cancel.stop(error)

    def api_key(self) -> str | None:
        """The key from the environment; 'no-key' for a keyless OpenAI-compatible server."""
        if self.spec.api_key_env and os.environ.get(self.spec.api_key_env):
            return os.environ[self.spec.api_key_env]
        return "no-key" if self.spec.api_base else None  # such servers often need none

    def missing_extra(self) -> str | None:
        """Why this in-process embedder cannot run (its weights package is absent), else None.

        Metrics ask before the run and skip with this notice instead of failing the run.
        """
        if not self.spec.is_local_embedder:
            return None
        from runner.llm.local import embedder as local_embedder

        try:
            local_embedder.check_available()
        except ConfigError as err:
            return str(err)
        return None

    def embed(self, texts: Sequence[str], *, purpose: str = "") -> list[list[float]]:
        """One embedding per text (the ``embedder`` role), cached per text."""
        from runner.llm.embed import embed

        return embed(self, texts, purpose)

    def _register_local(self) -> str:
        """The litellm model string of this role's own llama.cpp instance ('local/<name>@judge').

        One instance per role, not per model: each keeps its own KV cache, so the judge's
        long instructions and SummIt's evaluator's document stay evaluated while the
        summarizer works (one shared instance re-read them after every summarizer call).
        The request, and so the cache key, still names the model alone.
        """
        _litellm()
        from runner.llm.local import model as local_model

        assert self._model_path is not None
        name = f"{self.spec.model[len(LOCAL_PREFIX) :]}@{self.role}"
        local_model.PROVIDER.register(
            name, Path(self._model_path), self.spec.n_ctx, self.spec.n_threads
        )
        return LOCAL_PREFIX + name

    def _attempt(self, kwargs: dict[str, Any]) -> Any:
        """One HTTP attempt (litellm's own retries are off: each attempt is counted here).

        A 200 whose answer is empty or cut-off JSON raises ``InvalidAnswerError`` so the
        retry policy asks again: such an answer is never cached nor logged as a call. An
        in-process model is exempt: it answers the same request the same way every time.
        A job stopped while this call was backing off makes no further attempt.
        """
        estimate = self.rate.estimate(kwargs["messages"]) if self.rate else 0
        if self.rate is not None:
            self.rate.acquire(estimate, self.cancel)
        if self.cancel.is_set():  # Cancelled is no LLMError: the retry loop lets it through
            raise Cancelled(f"{self.role}={self.name}: the job was stopped during retries")
        try:
            response = _litellm().completion(**kwargs)
        except Exception as err:  # translated once, here, into runner.api.errors
            spec = self.spec
            error = translate(err, self.role, spec.name, spec.api_base, spec.model)
            if self.rate is not None and isinstance(error, RateLimitedError):
                self.rate.rejected(error.retry_after)  # every job of the sweep waits it out
            self.refused(error)
            raise error from err
        if self.rate is not None:
            usage = getattr(response, "usage", None)
            self.rate.settle(
                estimate,
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
            )
        if not self.spec.in_process:
            json_mode = (kwargs.get("response_format") or {}).get("type") == "json_object"
            check_answer(response, json_mode, self.role, self.spec.name)
        return response


def _existing(path: str) -> str:
    expanded = os.path.expanduser(path)
    if not os.path.isfile(expanded):
        raise ConfigError(f"model.path={path} does not exist; point it at a .gguf file")
    return expanded


__all__ = ["CallLog", "Gateway", "LLMError", "ModelSpec"]
