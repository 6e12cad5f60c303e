"""Metrics, picked by name (the keys of a ``conf/metrics/*.yaml`` group).

Each entry is a module with ``ROLES``, ``PROMPT_DIRS`` (its folders under ``prompts/``, hashed
into the fingerprint) and ``setup(<roles>, *, <params>) -> Metric``
(``metrics/base.py``), its keyword parameters named like its YAML keys. A metric knows
nothing of Hydra, MLflow or litellm; one that cannot decide returns NaN with a note.
Adding one = one module here + one YAML file in conf/metrics/.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from metrics import (
    alignment,
    booookscore,
    coherence,
    coverage,
    entity_density,
    f1,
    geval,
    repetitiveness,
    rouge,
    stats,
    vagueness,
)

METRICS: dict[str, ModuleType] = {
    "alignment": alignment,
    "booookscore": booookscore,
    "coherence": coherence,
    "coverage": coverage,
    "entity_density": entity_density,
    "f1": f1,
    "geval": geval,
    "repetitiveness": repetitiveness,
    "rouge": rouge,
    "stats": stats,
    "vagueness": vagueness,
}

PROMPT_ROOT = Path(__file__).parent / "prompts"
"""``metrics/prompts/<metric>/``: logged with every run that uses the metric."""
