"""Faithfulness (StorySumm, FABLES raters): is the summary true to its source?

``metrics.faithfulness.method`` picks the rater; work in progress (see the package's
modules as they land).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.api import LLM, Metric

PROMPT_ROOT = Path(__file__).parent / "prompts"
"""``metrics/faithfulness/prompts/``: the package keeps its prompts beside it."""
PROMPT_DIRS = ("faithfulness",)
"""Its folder under ``PROMPT_ROOT``: every method's prompts, logged and fingerprinted."""
ROLES = ("judge",)
METHODS = ("binary", "cot", "claims")


def setup(
    judge: LLM,
    *,
    method: str = "binary",
    prompt_dir: str | None = None,
    retrieval: str = "bm25",
    chunk_tokens: int = 512,
    room_tokens: int = 256,
    max_tokens: int = 50,
    reasoning_tokens: int = 350,
    temperature: float = 0.0,
) -> Metric:
    """The metric for a job (parameters as in ``conf/metrics/faithfulness.yaml``)."""
    raise NotImplementedError


def _unused(*_: Any) -> None:
    return None
