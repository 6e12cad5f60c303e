"""Summarization strategies, picked by name (``strategy.name`` in conf/strategy/*.yaml).

A strategy is a plain function ``summarize(chunks, llm, **params) -> StrategyResult`` whose
keyword parameters are named like its YAML keys. It knows nothing of Hydra, MLflow or
litellm. Adding one = one module here + one YAML file in conf/strategy/.
"""

from __future__ import annotations

from typing import Callable

from strategies import baseline

STRATEGIES: dict[str, Callable[..., object]] = {
    "baseline": baseline.summarize,
}
