"""baseline's ``estimate`` hook (declared by ``baseline.py``): its one call per document."""

from __future__ import annotations

from runner.api import (
    Phase,
    StrategyEstimateInput,
    count_tokens,
    decode,
    encode,
    prompt_text,
    template_tokens,
)
from strategies.estimating import prompt_set


def estimate(inputs: StrategyEstimateInput) -> list[Phase]:
    """One call: the document cut to what fits the window with the prompt and the budget.

    Nothing when the response cache already has that call.
    """
    params, model = inputs.params, inputs.roles["model"]
    named = prompt_set(inputs.prompt, "baseline", "paper")  # one prompt, no sets to choose
    budget = int(params["max_summary_len"])
    words = int(budget * float(params["words_per_token"]))
    overhead = template_tokens(named("summarize"), "", words)
    room = int(inputs.window * (1 - float(params["safety_margin"]))) - overhead - budget
    text = "".join(c.text for c in inputs.chunks)
    tokens = encode(text)
    kept = text if len(tokens) <= room else decode(tokens[: max(0, room)])
    if model.cached(prompt_text(named("summarize")).format(kept.strip(), words), budget):
        return []
    answer = model.fill("baseline") * budget
    return [Phase("model", "baseline", 1, overhead + count_tokens(kept), answer, 1)]
