"""Hierarchical merging (BooookScore paper, Appendix A.1; prompts M.2 / M.2.1).

Level 0 summarizes every chunk on its own; these calls are independent and run
concurrently. Level l >= 1 walks the level l-1 summaries in order and packs as many
consecutive ones as fit ``tokens(prompt + summaries + prior context) + G_l <= W``; the
prior context (the previous merge of the same level) makes merges within a level
sequential. Repeat until one summary remains. Level 1 starts as soon as the summaries
its first merge needs are ready, while the rest of level 0 is still in flight.

Budgets: G_top = ``max_summary_len``, ``level_ratio`` less per level down. The number of
levels is planned up front from worst-case sizes (every summary at its full budget), so
G_0 is known before the first call and an impossible setting fails before any spend; a
level whose summaries all fit one merge at the final budget becomes the top level.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager

from runner.api import LLM, Chunk, Completion, ConfigError, StrategyResult, ThreadPool, TraceStep
from runner.api.budgets import effective_window, level_budgets, word_limit
from runner.api.generation import Attempts, regenerate, tally
from strategies import postprocess as post
from strategies.hier.estimate import estimate as estimate  # estimate=true counts its calls
from strategies.hier.merge import (
    LABEL_TOKENS,
    Inputs,
    Setup,
    fits_one_merge,
    merge_level,
    overhead,
    step,
)
from strategies.hier.view import trace_view as trace_view  # the viewer's drawing of the trace
from strategies.prompting import PROMPT_ROOT as PROMPT_ROOT  # prompts/ beside the package
from strategies.prompting import fill, load_prompt_set

PROMPT_NAMES = ("init", "merge", "merge_context", "compress")


ROLES = ("model",)
"""The summarizer only."""
BATCH_ROLES = ("model",)
"""Level 0 summarizes every chunk at once (one batch with ``model.batch=true``); each merge
needs the summaries below it, so each later level waits for its own batch round (with
``merge_context``, each merge of a level waits for the one before)."""
IGNORES: dict[str, str] = {}
"""Set keys this strategy does not read, with why (a note when a run sets one): none."""
PROMPT_DIRS = ("hier", "common")
"""Its folders under ``strategies/prompts/``: logged and hashed into the fingerprint."""


def summarize(
    chunks: list[Chunk],
    model: LLM,
    *,
    prompts: str = "paper",
    max_summary_len: int = 900,
    level_ratio: float = 0.65,
    words_per_token: float = 0.65,
    context_share: float = 0.2,
    max_attempts: int = 6,
    max_levels: int = 8,
    max_merges_per_level: int = 256,
    safety_margin: float = 0.05,
    postprocess: str | None = "remove_artifacts",
) -> StrategyResult:
    """Summarize ``chunks`` by hierarchical merging; the trace holds the whole merge tree.

    ``max_attempts`` bounds regenerations per summary; ``max_levels`` and
    ``max_merges_per_level`` turn a runaway tree into a config error instead of a bill.
    """
    if not chunks:
        return StrategyResult("", (), {"calls": 0.0, "levels": 0.0, "merges": 0.0})
    setup = Setup(
        model,
        load_prompt_set("hier", prompts, PROMPT_NAMES),
        effective_window(model, safety_margin),
        max_summary_len,
        words_per_token,
        context_share,
        max_attempts,
        max_merges_per_level,
    )
    cleanup = post.check(postprocess)
    _check_final(setup, cleanup)
    top = plan_levels(setup, len(chunks), level_ratio, max_levels)
    budgets = level_budgets(max_summary_len, level_ratio, top)
    _check_level0(setup, chunks, budgets[0])
    plan = {
        "window": model.context_window,
        "effective_window": setup.window,
        "planned_levels": top,
        "budgets": budgets,
        "prompts": prompts,
        "chunks": len(chunks),
    }
    with _level0(setup, chunks, budgets[0]) as pending:
        summary, level, merges, calls = _climb(setup, Inputs(pending), budgets, max_levels)
        results = [f.result() for f in pending]
    trace = [TraceStep("plan", "", plan)]
    trace += [
        step(
            "summarize",
            r,
            level=0,
            index=i,
            chunk=c.index,
            chunk_tokens=c.n_tokens,
            budget=budgets[0],
        )
        for i, (c, r) in enumerate(zip(chunks, results, strict=True))
    ]
    trace += merges
    calls = [c for r in results for c in r.calls] + calls
    if cleanup:
        summary, cleaned, completion = post.remove_artifacts(summary, model, budget=max_summary_len)
        trace.append(cleaned)
        calls.append(completion)
    counters = tally(calls)
    counters.update(_counts(trace), levels=float(level))
    counters["postprocess_rejected"] = (
        float(any(s.detail.get("rejected") for s in trace if s.kind == "postprocess"))
        if cleanup
        else 0.0
    )
    return StrategyResult(summary, tuple(trace), counters)


def _climb(
    setup: Setup, inputs: Inputs, budgets: list[int], max_levels: int
) -> tuple[str, int, list[TraceStep], list[Completion]]:
    """Merge level after level until one summary remains: (summary, top level, steps, calls)."""
    steps: list[TraceStep] = []
    calls: list[Completion] = []
    level = 0
    while len(inputs) > 1:
        level += 1
        if level > max_levels:
            raise ConfigError(
                f"hier exceeded max_levels={max_levels}; raise strategy.max_levels or chunk"
            )
        budget = _level_budget(setup, inputs, budgets, level)
        texts, merged, done = merge_level(setup, inputs, level, budget)
        if len(texts) >= len(inputs):
            raise ConfigError(
                f"hier made no progress at level {level}: each merge fits one summary in the "
                f"{setup.window}-token window; lower strategy.max_summary_len or "
                "strategy.level_ratio"
            )
        steps += merged
        calls += done
        inputs = Inputs(texts)
    return inputs.text(0), level, steps, calls


def plan_levels(setup: Setup, n_chunks: int, ratio: float, max_levels: int) -> int:
    """The fewest levels that surely reduce ``n_chunks`` summaries to one.

    Worst case: every summary is as long as its budget and every merge after the first
    carries a prior context at its cap. The run may finish lower; it cannot need more.
    """
    for top in range(max_levels + 1):
        budgets = level_budgets(setup.final_budget, ratio, top)
        count = n_chunks
        for level in range(1, top + 1):
            count = _worst_case_merges(setup, count, budgets[level - 1], budgets[level])
            if count <= 1:
                break
        if count == 1:
            return top
    raise ConfigError(
        f"hier exceeded max_levels={max_levels}: {n_chunks} chunks need more levels in the "
        f"{setup.window}-token window; raise strategy.max_levels or chunk, or lower "
        f"strategy.max_summary_len"
    )


def _worst_case_merges(setup: Setup, count: int, child: int, budget: int) -> int:
    item = child + LABEL_TOKENS
    if count * item <= setup.window - setup.final_budget - overhead(
        setup, "merge", setup.final_budget
    ):
        return 1
    first = (setup.window - budget - overhead(setup, "merge", budget)) // item
    room = setup.window - budget - overhead(setup, "merge_context", budget)
    later = (room - min(budget, math.floor(setup.context_share * room))) // item
    if first < 1 or later < 2:
        return count  # no progress at this level: the caller tries more levels
    return 1 if count <= first else 1 + math.ceil((count - first) / later)


def _check_final(setup: Setup, cleanup: bool) -> None:
    """The final merge and the clean-up must fit at all, whatever the book."""
    need = setup.final_budget * (2 if cleanup else 1) + overhead(setup, "merge", setup.final_budget)
    if need > setup.window:
        raise ConfigError(
            f"strategy.max_summary_len={setup.final_budget} leaves no room in the "
            f"{setup.window}-token window of '{setup.llm.name}'; lower strategy.max_summary_len"
        )


def _check_level0(setup: Setup, chunks: list[Chunk], budget: int) -> None:
    """Every chunk's prompt plus the level-0 budget must fit (cheap: token counts are known)."""
    base = overhead(setup, "init", budget)
    for chunk in chunks:
        need = base + chunk.n_tokens + budget
        if need > setup.window:
            raise ConfigError(
                f"chunk {chunk.index} ({chunk.n_tokens} tokens) plus the level-0 prompt and budget "
                f"needs {need} tokens, over the {setup.window}-token window of '{setup.llm.name}'; "
                f"lower chunk (at most {setup.window - base - budget})"
            )


@contextmanager
def _level0(setup: Setup, chunks: list[Chunk], budget: int) -> Iterator[list[Future[Attempts]]]:
    """Every chunk summarized on its own, up to ``llm.concurrency`` at once, in chunk order."""
    words = word_limit(budget, setup.words_per_token)

    def one(chunk: Chunk) -> Attempts:
        return regenerate(
            setup.llm,
            lambda w: fill(setup.templates["init"], chunk.text.strip(), w),
            budget=budget,
            words=words,
            max_attempts=setup.max_attempts,
            purpose="hier/level0",
        )

    workers = min(max(1, int(setup.llm.concurrency)), len(chunks))
    pool = ThreadPool(max_workers=workers, thread_name_prefix="hier-level0")
    try:
        yield [pool.submit(one, c) for c in chunks]  # ThreadPool: calls stay the document's
    except BaseException:  # don't wait for calls in flight: the job is stopping
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _level_budget(setup: Setup, inputs: Inputs, budgets: list[int], level: int) -> int:
    """The final budget when everything fits one merge, else the planned G_l."""
    if fits_one_merge(setup, inputs, setup.final_budget):
        return setup.final_budget
    return budgets[level] if level < len(budgets) else setup.final_budget


def _counts(trace: list[TraceStep]) -> dict[str, float]:
    """Merges, compressions, regenerations and fallbacks, read back from the trace."""
    called = [s for s in trace if s.kind in ("summarize", "merge", "compress")]
    return {
        "merges": float(sum(s.kind == "merge" for s in trace)),
        "compressions": float(sum(s.kind == "compress" for s in trace)),
        "regenerations": float(
            sum(s.detail["attempts"] - 1 for s in called if s.kind != "compress")
        ),
        "fallbacks": float(sum(bool(s.detail["fallback"]) for s in called)),
    }
