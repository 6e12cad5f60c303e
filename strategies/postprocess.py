"""Post-processing of a final summary: the paper's M.3 artifact-removal prompt.

Incremental summaries especially keep phrases like "in this segment"; the authors ran
the M.3 prompt over every final summary (Appendix D.1). The raw summary stays in the
trace, so the effect of the clean-up can be measured rather than assumed.
"""

from __future__ import annotations

from runner.api import LLM, Completion, ConfigError, TraceStep, count_tokens, split_sentences, words
from runner.api.budgets import fit_to_budget
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


def plausible_edit(original: str, cleaned: str, share: float = 0.9) -> bool:
    """True when ``cleaned`` could come from ``original`` by deleting and lightly rewording.

    That is: not longer, and each of its sentences uses at least ``share`` of its words from
    the original. A small model asked for M.3 sometimes adds a '---' line or a sentence of the
    prompt itself ("This summary reads as if it was written all at once"); this refuses it.
    """
    if count_tokens(cleaned) > count_tokens(original):
        return False
    lines = {line.strip() for line in original.splitlines()}
    if any(
        line.strip() and not words(line) and line.strip() not in lines
        for line in cleaned.splitlines()
    ):
        return False  # a separator such as '---' the summary never had
    known = set(words(original))
    for sentence in split_sentences(cleaned):
        found = words(sentence)
        if not found or sum(w in known for w in found) < share * len(found):
            return False
    return True


def remove_artifacts(summary: str, llm: LLM, *, budget: int) -> tuple[str, TraceStep, Completion]:
    """The cleaned summary, its trace step and the call.

    An empty answer keeps the raw summary; an over-long or unterminated one is cut back
    to the budget and its last sentence end (the prompt only deletes, so this is rare). An
    answer that is not a plausible edit of the summary (``plausible_edit``) is rejected and
    the raw summary kept (``rejected`` in the trace, ``postprocess_rejected`` in the counters).
    """
    prompt = fill(load_prompt("common", "remove_artifacts"), summary)
    completion = llm.complete(prompt, max_tokens=budget, purpose="postprocess")
    cleaned = fit_to_budget(completion.text, budget) if completion.text.strip() else ""
    rejected = bool(cleaned) and not plausible_edit(summary, cleaned)
    kept_raw = not cleaned or rejected
    text = summary if kept_raw else cleaned
    step = TraceStep(
        kind="postprocess",
        call_id=completion.call_id,
        detail={
            "prompt_tokens": llm.count_tokens(prompt),
            "before_tokens": llm.count_tokens(summary),
            "after_tokens": llm.count_tokens(text),
            "kept_raw": kept_raw,
            "rejected": rejected,
            "answer": completion.text,
            "raw": summary,
            "text": text,
        },
    )
    return text, step, completion
