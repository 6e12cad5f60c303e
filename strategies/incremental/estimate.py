"""incremental's ``estimate`` hook: its calls for one document, from its chunks and parameters.

Mirrors ``summarize`` without running it: one update per chunk, each after the one before,
its word target growing with what has been read; compressions as the store measured them
(none until measured).
"""

from __future__ import annotations

from runner.api import Phase, StrategyEstimateInput, prompt_text, template_tokens
from strategies.estimating import cleans_up, cleanup, prompt_set, words

WORDS_PER_TOKEN = 0.75
"""English prose: about 0.75 words per cl100k token (an update's word target in tokens)."""


def estimate(inputs: StrategyEstimateInput) -> list[Phase]:
    """One update per chunk, each after the one before; compressions as measured (else none).

    A first update already in the response cache costs nothing.
    """
    params, chunks, model = inputs.params, inputs.chunks, inputs.roles["model"]
    named = prompt_set(inputs.prompt, "incremental", str(params["prompts"]))
    sizes = [c.n_tokens for c in chunks]
    budget = int(params["max_summary_len"])
    final_words = words(budget, float(params["words_per_token"]))
    attempts = int(params["max_attempts"])
    total = sum(max(1, s) for s in sizes)
    measured = model.measured("incremental/update")
    guess = "guess: its word target at 0.75 words a token (bounds: none of the budget to all)"
    read, running, prompt_tokens, answers = 0, 0.0, 0.0, 0.0
    first_cached = False
    for position, size in enumerate(sizes):
        read += max(1, size)
        target = max(1, round(final_words * read / total))
        if position == 0:
            text = prompt_text(named("init")).format(chunks[0].text.strip(), target, target)
            first_cached = model.cached(text, budget)
            overhead = template_tokens(named("init"), "", target, target)
            prompt_tokens += 0 if first_cached else overhead + size
        else:
            prompt_tokens += template_tokens(named("intermediate"), "", "", target, target)
            prompt_tokens += size + running
        expected = target / WORDS_PER_TOKEN
        if measured:
            running = model.fill("incremental/update") * budget
        else:
            running = model.pick("incremental/update answers", expected, 0.0, budget, guess)
        running = min(float(budget), running)
        answers += 0 if position == 0 and first_cached else running
    n = len(sizes) - first_cached
    phases = [
        Phase(
            "model",
            "incremental/update",
            n,
            prompt_tokens,
            answers,
            n,
            f"{n * (attempts + 1)} if every update needed {attempts} compression calls",
        )
    ]
    per_update = model.calls("incremental/compress") / max(1, model.calls("incremental/update"))
    if per_update:
        calls = n * per_update
        overhead = template_tokens(named("compress"), "", 0, 0, 0)
        phases.append(
            Phase(
                "model",
                "incremental/compress",
                calls,
                calls * (overhead + budget),
                calls * model.completion("incremental/compress", budget * 0.6, ""),
                calls,
            )
        )
    if cleans_up(params["postprocess"]):
        phases.append(cleanup(named, running, model))
    return phases
