"""hier's ``estimate`` hook: its calls for one document, from its chunks and parameters.

Mirrors ``summarize`` (``__init__.py``, ``merge.py``) without running it: the chunk sizes
and prompt files are known exactly, the answers' lengths come from the role's ``Guide``.
Level 0 runs concurrently; the merge levels are chained by their prior context.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from runner.api import Phase, StrategyEstimateInput, prompt_text, template_tokens
from strategies.estimating import cleans_up, cleanup, prompt_set, words

LABEL_TOKENS = 6
""""\\n\\nSummary 12:\\n\\n" before each summary in a merge prompt (``merge.prompt``)."""
PLAN_LABEL_TOKENS = 8
"""The planning allowance per summary (``merge.LABEL_TOKENS``)."""
MAX_ESTIMATED_LEVELS = 16
"""Merge levels followed at most (a guard: the plan never needs this many)."""

Over = Callable[[str, int], int]
"""Tokens a prompt adds around what it is given, by its name and the answer's budget."""


def estimate(inputs: StrategyEstimateInput) -> list[Phase]:
    """Level 0 (concurrent), the merge levels (chained by the prior context), the clean-up.

    A level-0 summary already in the response cache costs nothing.
    """
    params, chunks, model = inputs.params, inputs.chunks, inputs.roles["model"]
    named = prompt_set(inputs.prompt, "hier", str(params["prompts"]))
    final, ratio = int(params["max_summary_len"]), float(params["level_ratio"])
    wpt, share = float(params["words_per_token"]), float(params["context_share"])
    attempts = int(params["max_attempts"])
    usable = int(inputs.window * (1 - float(params["safety_margin"])))

    def over(name: str, budget: int) -> int:
        slots = {"init": 1, "merge": 1, "merge_context": 2}[name]
        return template_tokens(named(name), *([""] * slots), words(budget, wpt))

    top = _plan(len(chunks), usable, final, ratio, share, over, int(params["max_levels"]))
    budgets = [max(1, round(final * ratio ** (top - level))) for level in range(top + 1)]
    fill0, fill = model.fill("hier/level0"), model.fill("hier/merge")
    retry0, retry = model.retries("hier/level0"), model.retries("hier/merge")
    init, words0 = prompt_text(named("init")), words(budgets[0], wpt)
    hits = [model.cached(init.format(c.text.strip(), words0), budgets[0]) for c in chunks]
    sizes = [c.n_tokens for c, hit in zip(chunks, hits, strict=True) if not hit]
    n = len(sizes)
    ready = _ready(hits, model.concurrency, 1 + retry0)
    phases = [
        Phase(
            "model",
            "hier/level0",
            n * (1 + retry0),
            (sum(sizes) + n * over("init", budgets[0])) * (1 + retry0),
            n * fill0 * budgets[0] * (1 + retry0),
            math.ceil(n * (1 + retry0) / model.concurrency),
            f"{n * (attempts + 1)} with every regeneration (max_attempts={attempts})",
        )
    ]
    lengths = [fill0 * budgets[0]] * len(chunks)
    level = 0
    while len(lengths) > 1 and level < MAX_ESTIMATED_LEVELS:
        level += 1
        whole = over("merge", final) + sum(x + LABEL_TOKENS for x in lengths)
        budget = final if whole <= usable - final else budgets[min(level, len(budgets) - 1)]
        packed = _pack(lengths, usable, budget, share, fill, over)
        prompt_sizes = [p for p, _ in packed]
        count = len(prompt_sizes)
        rounds = count * (1 + retry)
        if level == 1:  # level 1 merges as level 0's summaries arrive (hier's Inputs)
            rounds = max(0.0, _chained(packed, ready, 1 + retry) - phases[0].rounds)
        phases.append(
            Phase(
                "model",
                f"hier/merge level {level}",
                count * (1 + retry),
                sum(prompt_sizes) * (1 + retry),
                count * fill * budget * (1 + retry),
                rounds,
                f"{count * (attempts + 1)} with every regeneration",
            )
        )
        lengths = [fill * budget] * count
    if cleans_up(params["postprocess"]):
        phases.append(cleanup(named, lengths[0] if lengths else 0.0, model))
    return phases


def _plan(
    n: int, usable: int, final: int, ratio: float, share: float, over: Over, max_levels: int
) -> int:
    """As ``plan_levels``: the fewest levels that surely merge ``n`` worst-case summaries."""
    for top in range(max_levels + 1):
        budgets = [max(1, round(final * ratio ** (top - level))) for level in range(top + 1)]
        count = n
        for level in range(1, top + 1):
            child, budget = budgets[level - 1], budgets[level]
            item = child + PLAN_LABEL_TOKENS
            if count * item <= usable - final - over("merge", final):
                count = 1
                break
            first = (usable - budget - over("merge", budget)) // item
            room = usable - budget - over("merge_context", budget)
            later = (room - min(budget, math.floor(share * room))) // item
            if first >= 1 and later >= 2:
                count = 1 if count <= first else 1 + math.ceil((count - first) / later)
            if count <= 1:
                break
        if count == 1:
            return top
    return max_levels


def _ready(hits: list[bool], concurrency: int, attempts: float) -> list[float]:
    """The round at which each level-0 summary is ready (in chunk order; cached ones at 0)."""
    out, position = [], 0
    for hit in hits:
        position += not hit
        out.append(0.0 if hit else math.ceil(position / concurrency) * attempts)
    return out


def _chained(packed: list[tuple[float, int]], ready: list[float], attempts: float) -> float:
    """The round at which level 1's last merge ends.

    Each merge waits for its inputs and for the merge before it (its prior context).
    """
    end, start = 0.0, 0
    for _, count in packed:
        end = max(end, ready[start + count - 1]) + attempts
        start += count
    return end


def _pack(
    lengths: list[float], usable: int, budget: int, share: float, fill: float, over: Over
) -> list[tuple[float, int]]:
    """(prompt tokens, summaries merged) of each merge of one level.

    Packed greedily, as ``merge.pack`` does.
    """
    room = usable - budget - over("merge_context", budget)
    cap = max(0, math.floor(share * room))
    prompts: list[tuple[float, int]] = []
    start = 0
    while start < len(lengths):
        context = min(fill * budget, cap) if prompts else 0.0
        base = (over("merge_context", budget) if context else over("merge", budget)) + context
        total = base + lengths[start] + LABEL_TOKENS
        count = 1
        while start + count < len(lengths):
            more = lengths[start + count] + LABEL_TOKENS
            if total + more > usable - budget:
                break
            total += more
            count += 1
        prompts.append((total, count))
        start += count
    return prompts
