"""Where the embedded model's time goes, by llama.cpp's own clocks.

Prompt evaluation (reading the prompt) and generation (writing the answer), summed over a
process's calls.

Kept apart from ``runner/llm/local/model.py`` (which imports litellm) so that the run's logging
can read the totals without importing it. The runner records them as ``time/local_*_s`` (and the
token counts as ``local/*``) in the run's ``usage.json`` (bookkeeping, not metrics to compare:
``runner/run/usage.py``), and the local-model benchmark prints their shares of the wall time.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

_lock = threading.Lock()


@dataclass
class LocalPerf:
    """Sums over the embedded model's calls in this process."""

    load_s: float = 0.0
    """Reading the weights (once per process and model)."""
    prompt_eval_s: float = 0.0
    """Prompt tokens evaluated (those not reused from the KV cache)."""
    generation_s: float = 0.0
    """Tokens generated."""
    prompt_tokens_evaluated: int = 0
    generated_tokens: int = 0
    copy_retries: int = 0
    """Answers drawn again because they opened with a copied sentence (``local/model.py``)."""


TOTALS = LocalPerf()


def add(
    load_s: float = 0.0,
    prompt_eval_s: float = 0.0,
    generation_s: float = 0.0,
    prompt_tokens: int = 0,
    generated: int = 0,
    copy_retries: int = 0,
) -> None:
    """Count one call's (or one load's) time."""
    with _lock:
        TOTALS.load_s += load_s
        TOTALS.prompt_eval_s += prompt_eval_s
        TOTALS.generation_s += generation_s
        TOTALS.prompt_tokens_evaluated += prompt_tokens
        TOTALS.generated_tokens += generated
        TOTALS.copy_retries += copy_retries


def snapshot() -> dict[str, float]:
    """The sums so far: seconds as ``time/local_*_s``, token counts as ``local/*``.

    Empty when the model never ran.
    """
    with _lock:
        if not (TOTALS.load_s or TOTALS.prompt_eval_s or TOTALS.generation_s):
            return {}
        values = asdict(TOTALS)
    return {
        (f"time/local_{k}" if k.endswith("_s") else f"local/{k}"): float(v)
        for k, v in values.items()
    }


def reset() -> None:
    """Start a job's sums at zero (a sweep's worker process runs several jobs).

    The model stays loaded, so a later job's load time is zero.
    """
    global TOTALS
    with _lock:
        TOTALS = LocalPerf()
