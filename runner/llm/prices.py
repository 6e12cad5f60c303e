"""A model's price per token and context window, known without importing litellm.

litellm takes seconds to import, longer than a whole sweep's estimate should take. Its price
map is a JSON file shipped inside the package (``model_prices_and_context_window_backup.json``,
the map litellm itself reads when ``LITELLM_LOCAL_MODEL_COST_MAP=True``, as
``runner/__init__.py`` sets); read here as data (a fraction of the import), litellm's code is
never imported, so the gateway stays the one door to its calls.
A model's configured ``input_cost_per_token``/``output_cost_per_token`` and
``context_window`` win, as they do in the gateway (``runner/llm/completions.py``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.llm.spec import ModelSpec

PRICE_MAP = "model_prices_and_context_window_backup.json"
"""The file in litellm's package folder that holds its price map."""
DEFAULT_WINDOW = 4096
"""The gateway's own fallback when litellm knows no window (``Gateway._context_window``)."""


@dataclass(frozen=True)
class Price:
    """What a model's calls cost and how much one may hold."""

    input_per_token: float
    """USD per prompt token (0 when unknown)."""
    output_per_token: float
    """USD per completion token (0 when unknown)."""
    window: int
    """Input window in tokens."""
    source: str
    """Where the figures come from: 'configured', "litellm's price map", 'in-process' or
    'unknown' (then the cost shows as 0 and the estimate says so)."""

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """USD for that many tokens."""
        return self.input_per_token * prompt_tokens + self.output_per_token * completion_tokens


@functools.cache
def _price_map() -> dict[str, Any]:
    """The price map bundled with litellm ({} without litellm or without the file)."""
    found = importlib.util.find_spec("litellm")  # locates the package; imports none of it
    if found is None or found.origin is None:
        return {}
    path = Path(found.origin).parent / PRICE_MAP
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _entry(model: str) -> dict[str, Any]:
    """The map's entry for a litellm model string.

    As given, else without its provider prefix when the entry is that provider's
    ('openai/gpt-4-0613' is the map's 'gpt-4-0613').
    """
    table = _price_map()
    if isinstance(table.get(model), dict):
        return dict(table[model])
    provider, slash, bare = model.partition("/")
    entry = table.get(bare) if slash else None
    if isinstance(entry, dict) and entry.get("litellm_provider", provider) == provider:
        return dict(entry)
    return {}


BATCH_DISCOUNT = 0.5
"""What a batch request costs against the same request online, where litellm's map gives no
batch price: Anthropic, OpenAI and Gemini all publish 50%."""


def batch_price_of(spec: ModelSpec) -> Price:
    """The model's prices for requests sent in a provider batch.

    litellm's map's batch prices (``input_cost_per_token_batches``) where it has them, else the
    online price (configured, or the map's) at ``BATCH_DISCOUNT``.
    """
    online = price_of(spec)
    entry = {} if spec.in_process or online.source == "configured" else _entry(spec.model)
    if entry.get("input_cost_per_token_batches") is not None:
        return Price(
            float(entry["input_cost_per_token_batches"]),
            float(entry.get("output_cost_per_token_batches") or 0.0),
            online.window,
            "litellm's price map (batch)",
        )
    return Price(
        online.input_per_token * BATCH_DISCOUNT,
        online.output_per_token * BATCH_DISCOUNT,
        online.window,
        f"{online.source}, at the batch discount ({BATCH_DISCOUNT:.0%})",
    )


def price_of(spec: ModelSpec) -> Price:
    """The model's prices and window: configured, else litellm's map, else unknown (0 USD)."""
    entry = {} if spec.in_process else _entry(spec.model)
    window = spec.known_window or int(
        entry.get("max_input_tokens") or entry.get("max_tokens") or DEFAULT_WINDOW
    )
    if spec.input_cost_per_token is not None or spec.output_cost_per_token is not None:
        prompt, completion = spec.input_cost_per_token, spec.output_cost_per_token
        return Price(prompt or 0.0, completion or 0.0, window, "configured")
    if spec.in_process:
        return Price(0.0, 0.0, window, "in-process")
    if "input_cost_per_token" in entry:
        return Price(
            float(entry.get("input_cost_per_token") or 0.0),
            float(entry.get("output_cost_per_token") or 0.0),
            window,
            "litellm's price map",
        )
    return Price(0.0, 0.0, window, "unknown")
