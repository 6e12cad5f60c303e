"""Summarization strategies, picked by name (``strategy.name`` in conf/strategy/*.yaml).

A strategy is a plain function ``summarize(chunks, llm, **params) -> StrategyResult`` whose
keyword parameters are named like its YAML keys. It knows nothing of Hydra, MLflow or
litellm. Adding one = one module here + one YAML file in conf/strategy/. A strategy that
declares a keyword-only ``doc_id`` receives the document's id from the runner (it is not
a YAML key).
"""

from __future__ import annotations

from typing import Callable

from strategies import baseline, hier, incremental, precomputed

STRATEGIES: dict[str, Callable[..., object]] = {
    "baseline": baseline.summarize,
    "hier": hier.summarize,
    "incremental": incremental.summarize,
    "precomputed": precomputed.summarize,
}
