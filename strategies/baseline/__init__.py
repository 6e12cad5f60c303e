"""One-pass baseline (BooookScore paper, Appendix E).

The whole document in one call, truncated to what fits the model's context window once
the prompt and the summary budget are reserved. Truncation is reported in the counters,
because a silently truncated book would make the baseline look better than it is.
"""

from __future__ import annotations

from runner.api import (
    LLM,
    Chunk,
    ConfigError,
    StrategyResult,
    TraceStep,
    count_tokens,
    cut_to_sentence_end,
    decode,
    encode,
)
from runner.api.generation import tally
from strategies.baseline.estimate import estimate as estimate  # estimate=true counts its call
from strategies.prompting import PROMPT_ROOT as PROMPT_ROOT  # prompts/ beside the package
from strategies.prompting import fill, load_prompt

ROLES = ("model",)
"""The summarizer only."""
BATCH_ROLES = ("model",)
"""One call per document, none waiting on another: ``model.batch=true`` sends every
document's call in one provider batch."""
PROMPT_DIRS = ("baseline", "common")
"""Its folders under ``strategies/prompts/``: logged and hashed into the fingerprint."""
IGNORES = {"chunk": "baseline reads the whole document in one call, cut to the model's context"}
"""Run-level keys this strategy does not use, and why (the runner says so when they are set)."""


def summarize(
    chunks: list[Chunk],
    model: LLM,
    *,
    max_summary_len: int = 900,
    words_per_token: float = 0.65,
    safety_margin: float = 0.1,
) -> StrategyResult:
    """Summarize the concatenated chunks in one call.

    ``safety_margin`` reserves a share of the window because budgets are counted in
    cl100k_base tokens while the model may tokenize more densely.
    """
    template = load_prompt("baseline", "summarize")
    text = "".join(chunk.text for chunk in chunks)
    word_limit = int(max_summary_len * words_per_token)
    overhead = count_tokens(fill(template, "", word_limit))
    room = int(model.context_window * (1 - safety_margin)) - overhead - max_summary_len
    if room <= 0:
        raise ConfigError(
            f"max_summary_len={max_summary_len} leaves no room for input in the "
            f"{model.context_window}-token window; lower strategy.max_summary_len"
        )
    tokens = encode(text)
    kept = text if len(tokens) <= room else decode(tokens[:room])
    truncated = len(tokens) - count_tokens(kept)
    completion = model.complete(
        fill(template, kept.strip(), word_limit), max_tokens=max_summary_len, purpose="baseline"
    )
    summary = completion.text.strip()
    if completion.finish_reason == "length":
        summary = cut_to_sentence_end(summary) or summary
    step = TraceStep(
        kind="summarize",
        call_id=completion.call_id,
        detail={
            "input_tokens": len(tokens),
            "kept_tokens": len(tokens) - truncated,
            "truncated_tokens": truncated,
            "prompt_tokens": completion.prompt_tokens,
            "output_tokens": completion.completion_tokens,
            "finish_reason": completion.finish_reason,
            "text": summary,
        },
    )
    return StrategyResult(
        summary=summary,
        trace=(step,),
        counters={
            **tally([completion]),
            "truncated_tokens": truncated,
            "truncated": float(truncated > 0),
        },
    )
