"""SummIt's ``estimate`` hook: the draft, then its evaluate/refine rounds, for one document.

A document that fits is summarized directly; a longer one is drafted by its base strategy
(``draft=``, that strategy's own hook) and both roles see what of it fits. The rounds are
counted at ``max_iterations``, the dear end of their range (SummIt stops early on
``<STOP>``, Keep-only feedback or an unchanged revision: one round at the cheap end).
"""

from __future__ import annotations

from runner.api import Chunk, ConfigError, Guide, Phase, Prompt, plugin

DIRECT_PROMPT_TOKENS = 300
"""The direct summary's prompt around the document (instructions and budget)."""
FITS_ALLOWANCE = 1500
"""Tokens kept free beside the document and two summaries for it to be summarized directly."""
EVALUATE_PROMPT_TOKENS = 400
"""An evaluation's prompt around the source and the summary."""
REFINE_PROMPT_TOKENS = 300
"""A revision's prompt around the source, the summary and the feedback."""
FEEDBACK_SHARE = 0.6
"""Guess: feedback uses 60% of ``eval_max_tokens``."""


def estimate(
    chunks: list[Chunk],
    model: Guide,
    evaluator: Guide,
    *,
    window: int,
    prompt: Prompt,
    draft: str = "hier",
    draft_for: str = "long",
    max_iterations: int = 5,
    max_summary_len: int = 900,
    eval_max_tokens: float = 512,
    **params: object,
) -> list[Phase]:
    """The draft, then ``max_iterations`` evaluations and one revision fewer (the cap)."""
    sizes = [c.n_tokens for c in chunks]
    budget = int(max_summary_len)
    fits = sum(sizes) + budget * 2 + FITS_ALLOWANCE < window
    if fits and draft_for == "long":
        answer = model.fill("summit/summarize") * budget
        phases = [
            Phase("model", "summit/summarize", 1, sum(sizes) + DIRECT_PROMPT_TOKENS, answer, 1)
        ]
        source = float(sum(sizes))
    else:
        shape = getattr(plugin("strategy", str(draft)), "estimate", None)
        if shape is None:
            raise ConfigError(
                f"strategy.draft={draft}: its calls are unknown, so SummIt's cannot be counted; "
                "declare estimate(chunks, <roles>, *, window, prompt, <params>) in its module"
            )
        phases = shape(
            chunks, model, window=window, prompt=prompt, max_summary_len=budget, **params
        )
        source = float(min(sum(sizes), window // 2))
    rounds = _rounds(source, model, evaluator, int(max_iterations), budget, eval_max_tokens)
    return [*phases, *rounds]


def _rounds(
    source: float, model: Guide, evaluator: Guide, most: int, budget: int, eval_max_tokens: float
) -> list[Phase]:
    """``most`` evaluations and one revision fewer.

    ``source``: tokens of what both roles see of the document (the text, or what of it fits).
    """
    text = f"counted at max_iterations={most} (bounds: 1-{most}; it stops early on <STOP>)"
    iterations = round(model.pick("summit rounds", most, 1, most, text))
    summary = model.fill("summit/refine") * budget
    eval_cap = float(eval_max_tokens)
    feedback = evaluator.completion(
        "summit/evaluate",
        eval_cap * FEEDBACK_SHARE,
        "feedback at 60% of eval_max_tokens",
        cap=eval_cap,
    )
    cap = f"at most; stops early on <STOP> or Keep-only feedback (max_iterations={most})"
    return [
        Phase(
            "evaluator",
            "summit/evaluate",
            iterations,
            iterations * (source + summary + EVALUATE_PROMPT_TOKENS),
            iterations * feedback,
            iterations,
            cap,
        ),
        Phase(
            "model",
            "summit/refine",
            iterations - 1,
            (iterations - 1) * (source + summary + feedback + REFINE_PROMPT_TOKENS),
            (iterations - 1) * summary,
            iterations - 1,
            cap,
        ),
    ]
