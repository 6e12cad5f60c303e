"""Incremental updating (BooookScore paper, Appendix A.2; prompts M.1).

g_1 summarizes the first chunk; g_i updates g_{i-1} with chunk i. The word target in the
prompts grows with the share of the book read so far (in tokens), reaching the final
budget's word limit at the last chunk. When g_i exceeds G_n tokens or does not end at a
sentence end, the compression prompt condenses it (temperature 1, the paper's footnote
15); the chain is sequential by nature, so there is nothing to run concurrently within a
document.

Chunk size matters (the paper's 2048 vs 88K result): any chunk up to the window minus the
running summary and the budget works, including one chunk for the whole book.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.api import LLM, Chunk, Completion, ConfigError, StrategyResult, TraceStep
from runner.api.budgets import count_words, effective_window, is_valid, word_limit
from runner.api.generation import Attempts, compress, tally
from strategies import postprocess as post
from strategies.incremental.estimate import estimate as estimate  # estimate=true's count
from strategies.incremental.view import trace_view as trace_view  # the viewer's drawing
from strategies.prompting import PROMPT_ROOT as PROMPT_ROOT  # prompts/ beside the package
from strategies.prompting import fill, load_prompt_set

PROMPT_NAMES = ("init", "intermediate", "compress")


ROLES = ("model",)
"""The summarizer only."""
IGNORES: dict[str, str] = {}
"""Set keys this strategy does not read, with why (a note when a run sets one): none."""
PROMPT_DIRS = ("incremental", "common")
"""Its folders under ``strategies/prompts/``: logged and hashed into the fingerprint."""


def summarize(
    chunks: list[Chunk],
    model: LLM,
    *,
    prompts: str = "paper",
    max_summary_len: int = 900,
    words_per_token: float = 0.65,
    tolerance: float = 0.2,
    max_attempts: int = 6,
    safety_margin: float = 0.05,
    postprocess: str | None = "remove_artifacts",
) -> StrategyResult:
    """Summarize ``chunks`` by updating one running summary; the trace holds every g_i.

    A compression is accepted within (1 ± ``tolerance``) × the word target and under the
    budget; after ``max_attempts`` compression calls the closest attempt is kept, cut to fit.
    """
    if not chunks:
        return StrategyResult("", (), {"calls": 0.0, "compressions": 0.0})
    if not 0.0 <= tolerance < 1.0:
        raise ConfigError(
            f"strategy.tolerance={tolerance} must be in [0, 1); try strategy.tolerance=0.2"
        )
    templates = load_prompt_set("incremental", prompts, PROMPT_NAMES)
    window = effective_window(model, safety_margin)
    cleanup = post.check(postprocess)
    final_words = word_limit(max_summary_len, words_per_token)
    _check_fit(model, chunks, templates, window, max_summary_len, final_words, cleanup)
    targets = word_targets(chunks, final_words)
    trace: list[TraceStep] = [
        TraceStep(
            "plan",
            "",
            {
                "window": model.context_window,
                "effective_window": window,
                "budget": max_summary_len,
                "targets": targets,
                "prompts": prompts,
                "chunks": len(chunks),
            },
        )
    ]
    run = _Run(model, templates, window, max_summary_len, max_attempts, tolerance)
    calls: list[Completion] = []
    running = ""
    for position, (chunk, target) in enumerate(zip(chunks, targets, strict=True)):
        running, steps, done = _advance(run, position, chunk, target, running)
        trace += steps
        calls += done
    if cleanup:
        running, step, completion = post.remove_artifacts(running, model, budget=max_summary_len)
        trace.append(step)
        calls.append(completion)
    counters = tally(calls)
    compressions = [s for s in trace if s.kind == "compress"]
    counters.update(
        compressions=float(len(compressions)),
        compression_calls=float(sum(s.detail["attempts"] for s in compressions)),
        regenerations=0.0,
        fallbacks=float(sum(bool(s.detail["fallback"]) for s in compressions)),
    )
    counters["postprocess_rejected"] = (
        float(any(s.detail.get("rejected") for s in trace if s.kind == "postprocess"))
        if cleanup
        else 0.0
    )
    return StrategyResult(running, tuple(trace), counters)


@dataclass(frozen=True)
class _Run:
    """What every update step needs."""

    llm: LLM
    templates: dict[str, str]
    window: int
    budget: int
    max_attempts: int
    tolerance: float


def _advance(
    run: _Run, position: int, chunk: Chunk, target: int, running: str
) -> tuple[str, list[TraceStep], list[Completion]]:
    """g_i from chunk ``position`` and g_(i-1), compressed when over budget or unterminated."""
    text = chunk.text.strip()
    if position == 0:
        prompt = fill(run.templates["init"], text, target, target)
    else:
        prompt = fill(run.templates["intermediate"], text, running, target, target)
    completion = run.llm.complete(prompt, max_tokens=run.budget, purpose="incremental/update")
    updated = completion.text.strip()
    valid = is_valid(updated, run.budget)
    facts = _facts(
        run.llm,
        updated,
        index=position,
        chunk=chunk.index,
        chunk_tokens=chunk.n_tokens,
        target_words=target,
        prompt_tokens=run.llm.count_tokens(prompt),
        valid=valid,
    )
    steps = [TraceStep("update", completion.call_id, facts)]
    if valid:
        return updated, steps, [completion]
    result = compress(
        run.llm,
        run.templates["compress"],
        updated,
        target_words=target,
        budget=run.budget,
        window=run.window,
        max_attempts=run.max_attempts,
        tolerance=run.tolerance,
        purpose="incremental/compress",
    )
    steps.append(_compression_step(run.llm, updated, result, position, target))
    return result.text, steps, [completion, *result.calls]


def word_targets(chunks: list[Chunk], final_words: int) -> list[int]:
    """Word target after each chunk: ``final_words`` × the share of tokens read so far.

    Proportional to tokens rather than to the chunk count (the authors' code), so a
    short last chunk does not inflate the target of the one before it; never below 1.
    """
    total = sum(max(1, c.n_tokens) for c in chunks)
    targets, read = [], 0
    for chunk in chunks:
        read += max(1, chunk.n_tokens)
        targets.append(max(1, round(final_words * read / total)))
    return targets


def _check_fit(
    llm: LLM,
    chunks: list[Chunk],
    templates: dict[str, str],
    window: int,
    budget: int,
    words: int,
    cleanup: bool,
) -> None:
    """Every prompt must fit with a full-budget running summary and a full-budget answer."""
    first = llm.count_tokens(fill(templates["init"], chunks[0].text.strip(), words, words))
    overhead = llm.count_tokens(fill(templates["intermediate"], "", "", words, words))
    for position, chunk in enumerate(chunks):
        need = first + budget if position == 0 else overhead + chunk.n_tokens + 2 * budget
        if need > window:
            largest = window - overhead - 2 * budget
            raise ConfigError(
                f"chunk {chunk.index} ({chunk.n_tokens} tokens) with a {budget}-token running "
                f"summary and budget needs {need} tokens, over the {window}-token window of "
                f"'{llm.name}'; lower chunk (at most {max(largest, 0)}) or strategy.max_summary_len"
            )
    extra = post.overhead(llm) if cleanup else 0
    if cleanup and extra + 2 * budget > window:
        raise ConfigError(
            f"strategy.max_summary_len={budget} leaves no room for post-processing in the "
            f"{window}-token window; lower strategy.max_summary_len or set "
            "strategy.postprocess=none"
        )


def _facts(llm: LLM, text: str, **detail: Any) -> dict[str, Any]:
    detail.update(words=count_words(text), tokens=llm.count_tokens(text), text=text)
    return detail


def _compression_step(
    llm: LLM, before: str, result: Attempts, position: int, target: int
) -> TraceStep:
    return TraceStep(
        "compress",
        result.call_id,
        _facts(
            llm,
            result.text,
            index=position,
            target_words=target,
            before_words=count_words(before),
            before_tokens=llm.count_tokens(before),
            after_words=count_words(result.text),
            after_tokens=llm.count_tokens(result.text),
            attempts=len(result.calls),
            fallback=result.fallback,
            prompt_tokens=result.prompt_tokens,
            attempt_words=[count_words(c.text) for c in result.calls],
            call_ids=[c.call_id for c in result.calls],
        ),
    )
