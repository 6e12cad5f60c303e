"""What the built-in strategies' ``estimate`` hooks share: their prompt sets, the clean-up.

Each strategy's hook (``hier/estimate.py``, ``incremental/estimate.py``, ``baseline.py``,
``summit/estimate.py``) mirrors its own call structure without running it; these are the
pieces common to several of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from runner.api import Guide, Phase, Prompt, template_tokens

Named = Callable[[str], Path | None]
"""A prompt file by name within one strategy's prompt set ('init', 'merge', ...)."""


def prompt_set(prompt: Prompt, folder: str, chosen: str) -> Named:
    """A strategy's prompt by name: its chosen set's file, else the paper set's, else common's.

    As ``strategies.prompting.load_prompt_set`` picks them when the strategy runs.
    """

    def find(name: str) -> Path | None:
        for relative in (
            f"{folder}/{chosen}/{name}.txt",
            f"{folder}/paper/{name}.txt",
            f"{folder}/{name}.txt",
            f"common/{name}.txt",
        ):
            found = prompt(relative)
            if found is not None:
                return found
        return None

    return find


def words(tokens: float, words_per_token: float) -> int:
    """A token budget as the word limit a prompt states (at least one word)."""
    return max(1, round(tokens * words_per_token))


def cleanup(prompt: Named, summary: float, guide: Guide) -> Phase:
    """The M.3 clean-up of the final summary: its answer is about the summary's length."""
    overhead = template_tokens(prompt("remove_artifacts"))
    answer = guide.completion("postprocess", summary, "")
    return Phase("model", "postprocess", 1, overhead + summary, answer, 1)


def cleans_up(postprocess: object) -> bool:
    """Whether the ``postprocess`` parameter asks for the clean-up call."""
    return postprocess not in (None, False, "none", "null", "")
