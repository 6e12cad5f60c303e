"""Strategy ``lead_k``: the document's first ``k`` sentences, an extractive baseline.

Lead-k is the floor any abstractive strategy should clear: no model, so it is free and
deterministic. It imports only ``runner.api``, the plugin API.
"""

from __future__ import annotations

from runner.api import (
    Chunk,
    ConfigError,
    Phase,
    StrategyEstimateInput,
    StrategyResult,
    split_sentences,
)

ROLES: tuple[str, ...] = ()
"""No model role: nothing is generated."""
IGNORES = {
    "chunk": "lead_k reads the whole document, whatever its chunks",
    "temperature": "lead_k calls no model",
}
"""Run-level keys this strategy does not read, and why (the runner says so when they are set)."""
PROMPT_DIRS: tuple[str, ...] = ()
"""No prompts (a strategy with some lists its folders under ``prompts/`` beside it)."""


def summarize(chunks: list[Chunk], *, k: int = 3) -> StrategyResult:
    """The first ``k`` sentences of the document the chunks make up, joined by a space."""
    if k < 1:
        raise ConfigError(f"strategy.k={k} keeps no sentence; give k=1 or more")
    document = "".join(chunk.text for chunk in chunks)  # the chunks give back the document
    lead = split_sentences(document)[:k]
    return StrategyResult(summary=" ".join(lead), counters={"sentences": float(len(lead))})


def estimate(inputs: StrategyEstimateInput) -> list[Phase]:
    """No call to count: ``estimate=true`` asks each strategy for its calls per document.

    A strategy with a model role returns one ``Phase`` per group of alike calls (its role,
    purpose, calls, prompt and completion tokens, calls on the critical path), asking each
    role's ``Guide`` (``inputs.roles``) how long its answers are (``runner.api.estimating``);
    ``inputs.params["k"]`` is ``summarize``'s default or the run's value.
    """
    return []
