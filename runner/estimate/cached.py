"""Which predictable requests the response cache already answers (they cost nothing).

A request is predictable when it depends on the documents and the config alone: hier's
level-0 summaries, incremental's first update, baseline's one call, and BooookScore's
questions about a summary given by ``data=summaries``. Each is built as the gateway builds
it (``runner.llm.request.build_request`` and ``cache_fields``; the role's temperature, seed
and repeat from ``RunConfig``, as the job's gateways get them) and looked up in the cache
folder, so a job killed half-way, or rerun with a changed metric, is estimated at what is
left to pay.
Requests that depend on earlier answers (merges, later updates) are not looked up; an
identical rerun is caught whole (a FINISHED run with the same fingerprint). The embedded
model's requests are not looked up (their key names the model file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runner.api.types import Message
from runner.config.run_config import RunConfig
from runner.llm.cache import ResponseCache, cache_key
from runner.llm.request import build_request, cache_fields


@dataclass(frozen=True)
class Probe:
    """Asks the response cache about one role's requests."""

    config: RunConfig
    role: str
    cache: ResponseCache | None

    def hit(
        self,
        messages: Sequence[Message] | str,
        max_tokens: int | None,
        stop: Sequence[str] | None = None,
    ) -> bool:
        """Whether the first attempt (sample 0) of this request is in the cache."""
        spec = self.config.roles[self.role]
        if self.cache is None or spec.in_process:
            return False
        given = self.config.temperature_of(self.role)
        request = build_request(
            spec,
            messages,
            temperature=given if given is not None else spec.temperature,
            max_tokens=max_tokens,
            stop=stop,
            seed=self.config.call_seed,
            sample=0,
            response_format=None,
        )
        fields = cache_fields(request, model_file=None, sample=0, repeat=self.config.repeat)
        return self.cache.get(cache_key(fields)) is not None


def probes(config: RunConfig) -> dict[str, Probe]:
    """One probe per role, sharing the job's cache folder (none when the cache is off)."""
    cache = ResponseCache(config.cache_dir) if config.cache_dir else None
    return {role: Probe(config, role, cache) for role in config.roles}
