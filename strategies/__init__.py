"""The built-in summarization strategies, one module each, registered by name as entry points.

Each module declares ``ROLES`` (the model roles it needs, e.g. ``("model",)``), ``IGNORES``
(run-level keys it does not read, with why), ``PROMPT_DIRS`` (its folders under
``prompts/``) and ``summarize(chunks, <roles>, *, <params>) -> StrategyResult``: the runner
passes each role's model as the keyword argument of that name, and the YAML keys as the
keyword-only parameters (``runner/plugins/contract.py`` checks this). A strategy knows
nothing of Hydra, MLflow or litellm and imports only the plugin API (``runner.api``).
Adding one = one module + one YAML file in conf/strategy/ + its entry point in
pyproject.toml (``summarization_runner.strategies``), exactly as a researcher's own package
adds one. Nothing is imported here, so naming a strategy imports only that one.
"""

from __future__ import annotations

from pathlib import Path

PROMPT_ROOT = Path(__file__).parent / "prompts"
"""``strategies/prompts/<strategy>/`` and ``common/``: logged with every run that uses them."""
