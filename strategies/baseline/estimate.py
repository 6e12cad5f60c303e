"""baseline's ``estimate`` hook (declared by ``baseline.py``): its one call per document."""

from __future__ import annotations

from runner.api import (
    Chunk,
    Guide,
    Phase,
    Prompt,
    count_tokens,
    decode,
    encode,
    prompt_text,
    template_tokens,
)
from strategies.estimating import prompt_set


def estimate(
    chunks: list[Chunk],
    model: Guide,
    *,
    window: int,
    prompt: Prompt,
    max_summary_len: int = 900,
    words_per_token: float = 0.65,
    safety_margin: float = 0.1,
    prompts: str = "paper",
    **_: object,
) -> list[Phase]:
    """One call: the document cut to what fits the window with the prompt and the budget.

    Nothing when the response cache already has that call.
    """
    named = prompt_set(prompt, "baseline", str(prompts))
    budget = int(max_summary_len)
    words = int(budget * float(words_per_token))
    overhead = template_tokens(named("summarize"), "", words)
    room = int(window * (1 - float(safety_margin))) - overhead - budget
    text = "".join(c.text for c in chunks)
    tokens = encode(text)
    kept = text if len(tokens) <= room else decode(tokens[: max(0, room)])
    if model.cached(prompt_text(named("summarize")).format(kept.strip(), words), budget):
        return []
    answer = model.fill("baseline") * budget
    return [Phase("model", "baseline", 1, overhead + count_tokens(kept), answer, 1)]
