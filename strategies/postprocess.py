"""Post-processing of a final summary: the paper's M.3 artifact-removal prompt.

Incremental summaries especially keep phrases like "in this segment"; the authors ran
the M.3 prompt over every final summary (Appendix D.1). The raw summary stays in the
trace, so the effect of the clean-up can be measured rather than assumed.
"""

from __future__ import annotations

from runner.errors import ConfigError
from runner.types import LLM, Completion, TraceStep
from strategies.budgets import fit_to_budget
from strategies.prompting import fill, load_prompt

CHOICES = ("remove_artifacts", "none")


def check(postprocess: str | None) -> bool:
    """True when post-processing is on; a config error for an unknown choice."""
    if postprocess in (None, False, "none", "null", ""):
        return False
    if postprocess != "remove_artifacts":
        raise ConfigError(
            f"strategy.postprocess={postprocess} is unknown; available: {', '.join(CHOICES)}"
        )
    return True


def overhead(llm: LLM) -> int:
    """Tokens of the M.3 prompt without a summary, for the up-front window check."""
    return llm.count_tokens(fill(load_prompt("common", "remove_artifacts"), ""))


def remove_artifacts(summary: str, llm: LLM, *, budget: int) -> tuple[str, TraceStep, Completion]:
    """The cleaned summary, its trace step and the call.

    An empty answer keeps the raw summary; an over-long or unterminated one is cut back
    to the budget and its last sentence end (the prompt only deletes, so this is rare).
    """
    prompt = fill(load_prompt("common", "remove_artifacts"), summary)
    completion = llm.complete(prompt, max_tokens=budget, purpose="postprocess")
    cleaned = fit_to_budget(completion.text, budget) if completion.text.strip() else ""
    kept_raw = not cleaned
    text = summary if kept_raw else cleaned
    step = TraceStep(
        kind="postprocess",
        call_id=completion.call_id,
        detail={
            "prompt_tokens": llm.count_tokens(prompt),
            "before_tokens": llm.count_tokens(summary),
            "after_tokens": llm.count_tokens(text),
            "kept_raw": kept_raw,
            "raw": summary,
            "text": text,
        },
    )
    return text, step, completion
