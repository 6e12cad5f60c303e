"""The built-in metrics, one module each, registered by name as entry points.

Each module declares ``ROLES``, ``PROMPT_DIRS`` (its folders under ``prompts/``, hashed into
the fingerprint) and ``setup(<roles>, *, <params>) -> Metric`` (``runner.api.Metric``), its
keyword parameters named like its YAML keys (``runner/plugins/contract.py`` checks this).
A metric knows nothing of Hydra, MLflow or litellm; one that cannot decide returns NaN with
a note. Adding one = one module + one YAML file in conf/metrics/ + its entry point in
pyproject.toml (``summarization_runner.metrics``), exactly as a researcher's own package
adds one. Nothing is imported here, so naming a metric imports only that one.
"""

from __future__ import annotations

from pathlib import Path

PROMPT_ROOT = Path(__file__).parent / "prompts"
"""``metrics/prompts/<metric>/``: logged with every run that uses the metric."""
CLAIMS_PROMPT = PROMPT_ROOT / "alignment" / "claims.txt"
"""The article's claim-extraction prompt (slot ``{summary}``): the alignment metric's, which
the faithfulness metric's claims rater uses too when the data gives no claims."""
