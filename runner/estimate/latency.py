"""Seconds per call: measured in this store when it has runs of the model, else a default.

A call's latency is modelled as ``first + prompt_tokens * per_prompt_token +
completion_tokens * per_completion_token``: the time to the first token (network, queue,
reading the prompt), then the generation. For an API the prompt's part is folded into the
first term; for the in-process model it is not (llama.cpp reads the prompt on the CPU).

The defaults are published figures for remote APIs and a rough guess for the embedded
model; every estimate that uses one says so. Once this store has runs of the model,
``runner/estimate/history.py`` fits the same form to their ``calls.jsonl`` and replaces it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from runner.llm.spec import ModelSpec


@dataclass(frozen=True)
class Latency:
    """Seconds one call takes, from its size."""

    first: float
    """Seconds before the first generated token."""
    per_completion_token: float
    """Seconds per generated token."""
    per_prompt_token: float = 0.0
    """Seconds per prompt token (the in-process model reads its prompt on the CPU)."""
    source: str = ""
    """Where the figures come from (shown with the estimate)."""

    def seconds(self, prompt_tokens: float, completion_tokens: float) -> float:
        """One call's expected seconds."""
        return (
            self.first
            + self.per_prompt_token * prompt_tokens
            + self.per_completion_token * completion_tokens
        )


AIMULTIPLE = "AIMultiple LLM latency benchmark (research.aimultiple.com/llm-latency-benchmark)"
DEPLOYBASE = "Deploybase TTFT comparison, March 2026 (deploybase.ai/articles/llm-api-latency-...)"
DEFAULTS: dict[str, Latency] = {
    "openai": Latency(0.615, 0.026, source=f"default for openai: GPT-4's figures, {AIMULTIPLE}"),
    "anthropic": Latency(
        0.5,
        0.026,
        source=(
            f"default for anthropic: first token at Claude Sonnet's p95 of 0.5 s ({DEPLOYBASE}), "
            f"per token GPT-4's 26 ms ({AIMULTIPLE}; no per-token figure found for Claude)"
        ),
    ),
    "together_ai": Latency(
        0.495, 0.026, source=f"default for together_ai: Mistral Large's first token, {AIMULTIPLE}"
    ),
    "local": Latency(
        1.0,
        0.05,
        per_prompt_token=0.01,
        source=(
            "default for the embedded 0.5B model: a guess for 2 CPU cores (100 prompt and 20 "
            "generated tokens a second); one run measures it"
        ),
    ),
}
"""Per provider; any other provider (or an OpenAI-compatible server of unknown speed) gets
OpenAI's figures, and the estimate says so."""


def default_latency(spec: ModelSpec) -> Latency:
    """The documented default for the model's provider."""
    if spec.in_process:
        return DEFAULTS["local"]
    found = DEFAULTS.get(spec.provider)
    if found is not None and not spec.api_base:
        return found
    where = f"the server {spec.api_base}" if spec.api_base else f"provider '{spec.provider}'"
    fallback = DEFAULTS["openai"]
    return Latency(
        fallback.first,
        fallback.per_completion_token,
        source=f"no figure for {where}: OpenAI's used ({AIMULTIPLE})",
    )


def fit(samples: list[tuple[float, float, float]], source: str) -> Latency | None:
    """The model fitted to (prompt tokens, completion tokens, seconds) of measured calls.

    Least squares of seconds on completion tokens (the dominant term for an API); the mean
    when completion lengths hardly vary. None without samples.
    """
    if not samples:
        return None
    n = len(samples)
    xs = [c for _, c, _ in samples]
    ys = [s for _, _, s in samples]
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if n < 5 or spread <= (0.1 * mean_x) ** 2 * n:
        return Latency(statistics.median(ys), 0.0, source=source)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    slope = max(0.0, slope)
    first = max(0.0, mean_y - slope * mean_x)
    return Latency(first, slope, source=source)
