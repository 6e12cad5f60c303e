"""Summarization strategies, picked by name (``strategy.name`` in conf/strategy/*.yaml).

Each entry is a module with ``ROLES`` (the model roles it needs, e.g. ``("model",)`` or
``("model", "evaluator")``), ``IGNORES`` (set keys it does not read, with why), ``PROMPT_DIRS``
(its folders under ``prompts/``) and ``summarize(chunks, <roles>, *, <params>) -> StrategyResult``:
the runner passes each role's model as the keyword argument of that name, and the YAML
keys as the keyword-only parameters. A strategy knows nothing of Hydra, MLflow or
litellm. Adding one = one module here + one YAML file in conf/strategy/.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from strategies import baseline, hier, incremental, none, summit

STRATEGIES: dict[str, ModuleType] = {
    "baseline": baseline,
    "hier": hier,
    "incremental": incremental,
    "none": none,
    "summit": summit,
}

PROMPT_ROOT = Path(__file__).parent / "prompts"
"""``strategies/prompts/<strategy>/`` and ``common/``: logged with every run that uses them."""
