"""SummIt's ``estimate`` hook: the draft, then its evaluate/refine rounds, for one document.

A document that fits is summarized directly; a longer one is drafted by its base strategy
(``draft=``, that strategy's own hook) and both roles see what of it fits. The rounds are
counted at ``max_iterations``, the dear end of their range (SummIt stops early on
``<STOP>``, Keep-only feedback or an unchanged revision: one round at the cheap end).
"""

from __future__ import annotations

from runner.api import ConfigError, Guide, Phase, StrategyEstimateInput, run_estimate
from strategies.summit.draft import draft_keywords, draft_module

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


def estimate(inputs: StrategyEstimateInput) -> list[Phase]:
    """The draft, then ``max_iterations`` evaluations and one revision fewer (the cap)."""
    params, window = inputs.params, inputs.window
    model, evaluator = inputs.roles["model"], inputs.roles["evaluator"]
    sizes = [c.n_tokens for c in inputs.chunks]
    budget = int(params["max_summary_len"])
    fits = sum(sizes) + budget * 2 + FITS_ALLOWANCE < window
    if fits and params["draft_for"] == "long":
        answer = model.fill("summit/summarize") * budget
        phases = [
            Phase("model", "summit/summarize", 1, sum(sizes) + DIRECT_PROMPT_TOKENS, answer, 1)
        ]
        source = float(sum(sizes))
    else:
        draft = draft_module(str(params["draft"]))
        given = draft_keywords(draft.summarize, dict(params))
        drafted = run_estimate(
            draft,
            StrategyEstimateInput(inputs.chunks, {"model": model}, window, inputs.prompt, given),
        )
        if drafted is None:
            raise ConfigError(
                f"strategy.draft={params['draft']}: its calls are unknown, so SummIt's cannot "
                "be counted; declare estimate(inputs: runner.api.StrategyEstimateInput) in its "
                "module"
            )
        phases = drafted
        source = float(min(sum(sizes), window // 2))
    most = int(params["max_iterations"])
    rounds = _rounds(source, model, evaluator, most, budget, params["eval_max_tokens"])
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
