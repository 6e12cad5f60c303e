"""Token and word budgets of a summary: ``runner.api.budgets``.

Part of the plugin API (versioned with ``runner.api``), as the hierarchical, incremental and
SummIt strategies use it.

Budgets are counted in cl100k_base tokens (the paper's measure), and a summary is valid
only when it fits its budget *and* ends at a sentence end: a model stopped by
``max_tokens`` leaves a dangling sentence, which the next merge or update would inherit.
"""

from __future__ import annotations

from runner.api.errors import ConfigError
from runner.api.text import (
    count_tokens,
    cut_to_sentence_end,
    decode,
    encode,
    ends_with_sentence_end,
)
from runner.api.types import LLM


def effective_window(llm: LLM, safety_margin: float) -> int:
    """The part of the context window budgets may use.

    The margin covers what cl100k_base does not see: the model's own tokenizer may be
    denser, and the chat template adds a few tokens per message.
    """
    if not 0.0 <= safety_margin < 0.5:
        raise ConfigError(
            f"strategy.safety_margin={safety_margin} must be in [0, 0.5); "
            "try strategy.safety_margin=0.05"
        )
    return int(llm.context_window * (1.0 - safety_margin))


def word_limit(tokens: int, words_per_token: float) -> int:
    """The word count written into a prompt for a budget of ``tokens`` (at least 1)."""
    return max(1, round(tokens * words_per_token))


def lowered(words: int, attempt: int, step: float = 0.1) -> int:
    """The word limit of regeneration ``attempt``: 10% lower per attempt, never below 10%.

    Linear in the attempt number (the authors' code compounds it, which reaches 0 words
    by the seventh retry); the floor keeps the prompt meaningful.
    """
    return max(1, round(words * max(0.1, 1.0 - step * attempt)))


def level_budgets(final_budget: int, ratio: float, top_level: int) -> list[int]:
    """G_l for l = 0..top_level: the final budget at the top, ``ratio`` less per level down."""
    if not 0.0 < ratio <= 1.0:
        raise ConfigError(
            f"strategy.level_ratio={ratio} must be in (0, 1]; try strategy.level_ratio=0.65"
        )
    return [
        max(1, round(final_budget * ratio ** (top_level - level))) for level in range(top_level + 1)
    ]


def count_words(text: str) -> int:
    """Whitespace-separated words, as the prompts' word counts mean them."""
    return len(text.split())


def is_valid(text: str, budget: int) -> bool:
    """Non-empty, within ``budget`` tokens, and ending at a sentence end."""
    stripped = text.strip()
    return bool(stripped) and count_tokens(stripped) <= budget and ends_with_sentence_end(stripped)


def fit_to_budget(text: str, budget: int) -> str:
    """``text`` cut to ``budget`` tokens and back to its last sentence end.

    The paper's LLaMA-2 fallback ("truncate the results at the final punctuation mark").
    When no sentence end survives, the token-cut text is kept: dropping it would lose
    that part of the book entirely.
    """
    stripped = text.strip()
    tokens = encode(stripped)
    keep = budget
    while count_tokens(stripped) > budget and keep > 0:  # re-encoding may merge differently
        stripped = decode(tokens[:keep]).strip()
        keep -= 1
    if ends_with_sentence_end(stripped):
        return stripped
    return cut_to_sentence_end(stripped) or stripped
