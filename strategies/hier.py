"""Hierarchical merging (BooookScore paper, Appendix A.1; prompts M.2 / M.2.1).

Level 0 summarizes every chunk on its own; these calls are independent and run
concurrently. Level l >= 1 walks the level l-1 summaries in order and packs as many
consecutive ones as fit ``tokens(prompt + summaries + prior context) + G_l <= W``; the
prior context (the previous merge of the same level) makes merges within a level
sequential. Repeat until one summary remains.

Budgets: G_top = ``max_summary_len``, ``level_ratio`` less per level down. The number of
levels is planned up front from worst-case sizes (every summary at its full budget), so
G_0 is known before the first call and an impossible setting fails before any spend; a
level whose summaries all fit one merge at the final budget becomes the top level.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from runner.errors import ConfigError
from runner.text import cut_to_sentence_end, decode, encode
from runner.types import LLM, Chunk, StrategyResult, TraceStep
from strategies import postprocess as post
from strategies.budgets import effective_window, fit_to_budget, level_budgets, word_limit
from strategies.generation import Attempts, compress, load_prompt_set, regenerate, tally
from strategies.prompting import fill

PROMPT_NAMES = ("init", "merge", "merge_context", "compress")
LABEL_TOKENS = 8
"""Planning allowance for each summary's "Summary 12:" label and separator."""


@dataclass(frozen=True)
class _Setup:
    """Resolved settings the level helpers share."""

    llm: LLM
    templates: dict[str, str]
    window: int
    final_budget: int
    words_per_token: float
    context_share: float
    max_attempts: int
    max_merges: int


def summarize(
    chunks: list[Chunk],
    llm: LLM,
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
    setup = _Setup(
        llm, load_prompt_set("hier", prompts, PROMPT_NAMES), effective_window(llm, safety_margin),
        max_summary_len, words_per_token, context_share, max_attempts, max_merges_per_level,
    )
    cleanup = post.check(postprocess)
    _check_final(setup, cleanup)
    top = plan_levels(setup, len(chunks), level_ratio, max_levels)
    budgets = level_budgets(max_summary_len, level_ratio, top)
    plan = {"window": llm.context_window, "effective_window": setup.window, "planned_levels": top,
            "budgets": budgets, "prompts": prompts, "chunks": len(chunks)}
    trace: list[TraceStep] = [TraceStep("plan", "", plan)]
    results = _level0(setup, chunks, budgets[0])
    trace += [_step("summarize", r, level=0, index=i, chunk=c.index, chunk_tokens=c.n_tokens,
                    budget=budgets[0]) for i, (c, r) in enumerate(zip(chunks, results))]
    attempts: list[Attempts] = list(results)
    texts = [r.text for r in results]
    level = 0
    while len(texts) > 1:
        level += 1
        if level > max_levels:
            raise ConfigError(f"hier exceeded max_levels={max_levels}; raise strategy.max_levels or chunk")
        budget = _level_budget(setup, texts, budgets, level)
        merged, steps, done = _merge_level(setup, texts, level, budget)
        if len(merged) >= len(texts):
            raise ConfigError(
                f"hier made no progress at level {level}: each merge fits one summary in the "
                f"{setup.window}-token window; lower strategy.max_summary_len or strategy.level_ratio"
            )
        trace += steps
        attempts += done
        texts = merged
    summary = texts[0]
    calls = [c for a in attempts for c in a.calls]
    if cleanup:
        summary, step, completion = post.remove_artifacts(summary, llm, budget=max_summary_len)
        trace.append(step)
        calls.append(completion)
    counters = tally(calls)
    counters.update(_counts(trace), levels=float(level))
    return StrategyResult(summary, tuple(trace), counters)


def plan_levels(setup: _Setup, n_chunks: int, ratio: float, max_levels: int) -> int:
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


def _worst_case_merges(setup: _Setup, count: int, child: int, budget: int) -> int:
    item = child + LABEL_TOKENS
    if count * item <= setup.window - setup.final_budget - _overhead(setup, "merge", setup.final_budget):
        return 1
    first = (setup.window - budget - _overhead(setup, "merge", budget)) // item
    room = setup.window - budget - _overhead(setup, "merge_context", budget)
    later = (room - min(budget, math.floor(setup.context_share * room))) // item
    if first < 1 or later < 2:
        return count  # no progress at this level: the caller tries more levels
    return 1 if count <= first else 1 + math.ceil((count - first) / later)


def _overhead(setup: _Setup, name: str, budget: int) -> int:
    words = word_limit(budget, setup.words_per_token)
    blanks = ("",) * (setup.templates[name].count("{}") - 1)
    return setup.llm.count_tokens(fill(setup.templates[name], *blanks, words))


def _check_final(setup: _Setup, cleanup: bool) -> None:
    """The final merge and the clean-up must fit at all, whatever the book."""
    need = setup.final_budget * (2 if cleanup else 1) + _overhead(setup, "merge", setup.final_budget)
    if need > setup.window:
        raise ConfigError(
            f"strategy.max_summary_len={setup.final_budget} leaves no room in the {setup.window}-token "
            f"window of '{setup.llm.name}'; lower strategy.max_summary_len"
        )


def _level0(setup: _Setup, chunks: list[Chunk], budget: int) -> list[Attempts]:
    """Every chunk summarized on its own, concurrently, results in chunk order."""
    words = word_limit(budget, setup.words_per_token)
    for chunk in chunks:
        prompt = setup.llm.count_tokens(fill(setup.templates["init"], chunk.text.strip(), words))
        if prompt + budget > setup.window:
            raise ConfigError(
                f"chunk {chunk.index} ({chunk.n_tokens} tokens) plus the level-0 prompt and budget "
                f"({prompt + budget - chunk.n_tokens} tokens) exceed the {setup.window}-token window; "
                f"lower chunk"
            )

    def one(chunk: Chunk) -> Attempts:
        return regenerate(
            setup.llm, lambda w: fill(setup.templates["init"], chunk.text.strip(), w),
            budget=budget, words=words, max_attempts=setup.max_attempts, purpose="hier/level0",
        )

    workers = max(1, int(setup.llm.concurrency))
    if workers == 1 or len(chunks) == 1:
        return [one(c) for c in chunks]
    with ThreadPoolExecutor(max_workers=min(workers, len(chunks))) as pool:
        return list(pool.map(one, chunks))


def _level_budget(setup: _Setup, texts: list[str], budgets: list[int], level: int) -> int:
    """The final budget when everything fits one merge, else the planned G_l."""
    words = word_limit(setup.final_budget, setup.words_per_token)
    if _tokens(setup, "", texts, words) + setup.final_budget <= setup.window:
        return setup.final_budget
    return budgets[level] if level < len(budgets) else setup.final_budget


def _merge_level(
    setup: _Setup, texts: list[str], level: int, budget: int
) -> tuple[list[str], list[TraceStep], list[Attempts]]:
    """Merge consecutive summaries in order, each merge seeing the previous one as context."""
    texts = list(texts)
    words = word_limit(budget, setup.words_per_token)
    merged: list[str] = []
    steps: list[TraceStep] = []
    done: list[Attempts] = []
    start = 0
    while start < len(texts):
        if len(merged) >= setup.max_merges:
            raise ConfigError(
                f"hier exceeded max_merges_per_level={setup.max_merges} at level {level}; "
                f"raise strategy.max_merges_per_level or chunk"
            )
        context = _context(setup, merged[-1] if merged else "", budget, words)
        if _tokens(setup, "", texts[start : start + 1], words) + budget > setup.window:
            shrunk = _shrink(setup, texts[start], budget, words)
            steps.append(_step("compress", shrunk, level=level, child=start, budget=budget,
                               before_tokens=setup.llm.count_tokens(texts[start])))
            done.append(shrunk)
            texts[start] = shrunk.text
        if context and _tokens(setup, context, texts[start : start + 1], words) + budget > setup.window:
            context = ""
        count = _pack(setup, context, texts, start, words, budget)
        children = texts[start : start + count]
        more = texts[start : start + count + 1] if start + count < len(texts) else None
        result = regenerate(
            setup.llm, lambda w: _prompt(setup, context, children, w), budget=budget, words=words,
            max_attempts=setup.max_attempts, purpose="hier/merge",
        )
        steps.append(_step(
            "merge", result, level=level, index=len(merged), children=list(range(start, start + count)),
            context_tokens=setup.llm.count_tokens(context), budget=budget, window=setup.window,
            next_prompt_tokens=_tokens(setup, context, more, words) if more else None,
        ))
        done.append(result)
        merged.append(result.text)
        start += count
    return merged, steps, done


def _pack(setup: _Setup, context: str, texts: list[str], start: int, words: int, budget: int) -> int:
    """How many summaries from ``start`` fit: binary search on the exact prompt length."""
    low, high = 1, len(texts) - start
    while low < high:
        mid = (low + high + 1) // 2
        if _tokens(setup, context, texts[start : start + mid], words) + budget <= setup.window:
            low = mid
        else:
            high = mid - 1
    return low


def _context(setup: _Setup, previous: str, budget: int, words: int) -> str:
    """The previous merge, capped at ``context_share`` of the input room, cut to a sentence end."""
    if not previous:
        return ""
    room = setup.window - budget - _overhead(setup, "merge_context", budget)
    cap = max(0, math.floor(setup.context_share * room))
    tokens = encode(previous)
    if len(tokens) <= cap:
        return previous
    return cut_to_sentence_end(decode(tokens[:cap]))


def _shrink(setup: _Setup, text: str, budget: int, words: int) -> Attempts:
    """Compress a summary too long to fit any merge on its own (a guard the paper lacks).

    The compression's own prompt must fit too: its answer gets the room the merge leaves,
    but at most half of what the prompt leaves when the input is long (input beyond that
    is cut, the lesser evil next to a prompt the model rejects).
    """
    room = setup.window - budget - _tokens(setup, "", [""], words) - LABEL_TOKENS
    avail = setup.window - _overhead(setup, "compress", room)
    if room <= 0 or avail <= 1:
        raise ConfigError(
            f"a merge with a {budget}-token budget leaves no room for input in the "
            f"{setup.window}-token window; lower strategy.max_summary_len"
        )
    target = min(room, max(avail - setup.llm.count_tokens(text), avail // 2))
    result = compress(
        setup.llm, setup.templates["compress"], text,
        target_words=word_limit(target, setup.words_per_token), budget=target, window=setup.window,
        max_attempts=setup.max_attempts, tolerance=None, purpose="hier/compress",
    )
    return Attempts(fit_to_budget(result.text, target), result.calls, result.prompt_tokens,
                    result.word_limits, result.fallback)


def _prompt(setup: _Setup, context: str, children: list[str], words: int) -> str:
    """The merge prompt; summaries labelled "Summary j:" as in the authors' code."""
    body = "\n\n".join(f"Summary {j}:\n\n{text}" for j, text in enumerate(children, start=1))
    if context:
        return fill(setup.templates["merge_context"], context, body, words)
    return fill(setup.templates["merge"], body, words)


def _tokens(setup: _Setup, context: str, children: list[str], words: int) -> int:
    return setup.llm.count_tokens(_prompt(setup, context, children, words))


def _step(kind: str, result: Attempts, **detail: Any) -> TraceStep:
    """A trace step with the facts every call-backed step shares."""
    detail.update(
        prompt_tokens=result.prompt_tokens,
        output_tokens=len(encode(result.text)),
        attempts=len(result.calls),
        word_limits=list(result.word_limits),
        fallback=result.fallback,
        call_ids=[c.call_id for c in result.calls],
        text=result.text,
    )
    return TraceStep(kind, result.call_id, detail)


def _counts(trace: list[TraceStep]) -> dict[str, float]:
    """Merges, compressions, regenerations and fallbacks, read back from the trace."""
    called = [s for s in trace if s.kind in ("summarize", "merge", "compress")]
    return {
        "merges": float(sum(s.kind == "merge" for s in trace)),
        "compressions": float(sum(s.kind == "compress" for s in trace)),
        "regenerations": float(sum(s.detail["attempts"] - 1 for s in called if s.kind != "compress")),
        "fallbacks": float(sum(bool(s.detail["fallback"]) for s in called)),
    }
