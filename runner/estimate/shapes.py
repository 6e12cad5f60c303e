"""The calls a strategy makes for one document, from its chunks and parameters.

Each function mirrors its strategy's structure (``strategies/hier/__init__.py`` and ``hier_merge.py``,
``incremental.py``, ``baseline.py``, ``summit*.py``) without running any of its code: the
chunk sizes and prompt files are known exactly, the answers' lengths come from the role's
``Guide`` (measured, or a guess the notes name). A ``Phase`` is a group of alike calls; its
``rounds`` are the calls on the document's critical path (one after another).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.estimate.guide import WORDS_PER_TOKEN, Guide, template_tokens
from runner.text import count_tokens, decode, encode
from runner.types import Chunk

LABEL_TOKENS = 6
""""\\n\\nSummary 12:\\n\\n" before each summary in a merge prompt (hier_merge.prompt)."""
PLAN_LABEL_TOKENS = 8
"""hier's planning allowance per summary (``hier_merge.LABEL_TOKENS``)."""

Prompt = Callable[[str], Path | None]
"""Prompt file by name within the strategy's prompt set ('init', 'merge', ...)."""


@dataclass(frozen=True)
class Phase:
    """Alike calls of one role within one document."""

    role: str
    purpose: str
    calls: float
    prompt_tokens: float
    completion_tokens: float
    rounds: float
    """Calls on the critical path (the rest run beside them, up to the endpoint's limit)."""
    bound: str = ""
    """What an upper bound on these calls would be, when the count is an expectation."""


def _words(tokens: float, words_per_token: float) -> int:
    return max(1, round(tokens * words_per_token))


def _text(path: Path | None) -> str:
    """A prompt file's text as the strategies fill it (``strategies/prompting.load_prompt``)."""
    return path.read_text(encoding="utf-8").rstrip("\n") if path else ""


def hier(
    chunks: list[Chunk], window: int, params: dict[str, Any], prompt: Prompt, guide: Guide
) -> list[Phase]:
    """Level 0 (concurrent), the merge levels (chained by the prior context), the clean-up.

    A level-0 summary already in the response cache costs nothing.
    """
    final = int(params.get("max_summary_len", 900))
    ratio = float(params.get("level_ratio", 0.65))
    wpt = float(params.get("words_per_token", 0.65))
    share = float(params.get("context_share", 0.2))
    attempts = int(params.get("max_attempts", 6))
    usable = int(window * (1 - float(params.get("safety_margin", 0.05))))

    def over(name: str, budget: int) -> int:
        slots = {"init": 1, "merge": 1, "merge_context": 2}[name]
        return template_tokens(prompt(name), *([""] * slots), _words(budget, wpt))

    top = _plan(len(chunks), usable, final, ratio, share, over, int(params.get("max_levels", 8)))
    budgets = [max(1, round(final * ratio ** (top - level))) for level in range(top + 1)]
    fill0, fill = guide.fill("hier/level0"), guide.fill("hier/merge")
    retry0, retry = guide.retries("hier/level0"), guide.retries("hier/merge")
    init, words0 = _text(prompt("init")), _words(budgets[0], wpt)
    hits = [guide.cached(init.format(c.text.strip(), words0), budgets[0]) for c in chunks]
    sizes = [c.n_tokens for c, hit in zip(chunks, hits, strict=True) if not hit]
    n = len(sizes)
    ready = _ready(hits, guide.concurrency, 1 + retry0)
    phases = [
        Phase(
            "model",
            "hier/level0",
            n * (1 + retry0),
            (sum(sizes) + n * over("init", budgets[0])) * (1 + retry0),
            n * fill0 * budgets[0] * (1 + retry0),
            math.ceil(n * (1 + retry0) / guide.concurrency),
            f"{n * (attempts + 1)} with every regeneration (max_attempts={attempts})",
        )
    ]
    lengths = [fill0 * budgets[0]] * len(chunks)
    level = 0
    while len(lengths) > 1 and level < 16:
        level += 1
        whole = over("merge", final) + sum(x + LABEL_TOKENS for x in lengths)
        budget = final if whole <= usable - final else budgets[min(level, len(budgets) - 1)]
        packed = _pack(lengths, usable, budget, share, fill, over)
        prompts = [p for p, _ in packed]
        count = len(prompts)
        rounds = count * (1 + retry)
        if level == 1:  # level 1 merges as level 0's summaries arrive (hier's Inputs)
            rounds = max(0.0, _chained(packed, ready, 1 + retry) - phases[0].rounds)
        phases.append(
            Phase(
                "model",
                f"hier/merge level {level}",
                count * (1 + retry),
                sum(prompts) * (1 + retry),
                count * fill * budget * (1 + retry),
                rounds,
                f"{count * (attempts + 1)} with every regeneration",
            )
        )
        lengths = [fill * budget] * count
    if _on(params.get("postprocess", "remove_artifacts")):
        phases.append(_cleanup(prompt, lengths[0] if lengths else 0.0, guide))
    return phases


def _plan(
    n: int,
    usable: int,
    final: int,
    ratio: float,
    share: float,
    over: Callable[[str, int], int],
    max_levels: int,
) -> int:
    """As hier's ``plan_levels``: the fewest levels that surely merge ``n`` worst-case summaries."""
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
    lengths: list[float],
    usable: int,
    budget: int,
    share: float,
    fill: float,
    over: Callable[[str, int], int],
) -> list[tuple[float, int]]:
    """(prompt tokens, summaries merged) of each merge of one level.

    Packed greedily, as ``hier_merge.pack`` does.
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


def incremental(
    chunks: list[Chunk], window: int, params: dict[str, Any], prompt: Prompt, guide: Guide
) -> list[Phase]:
    """One update per chunk, each after the one before; compressions as measured (else none).

    A first update already in the response cache costs nothing.
    """
    sizes = [c.n_tokens for c in chunks]
    budget = int(params.get("max_summary_len", 900))
    final_words = _words(budget, float(params.get("words_per_token", 0.65)))
    attempts = int(params.get("max_attempts", 6))
    total = sum(max(1, s) for s in sizes)
    measured = guide.measured("incremental/update")
    guess = "guess: its word target at 0.75 words a token (bounds: none of the budget to all)"
    read, running, prompts, answers = 0, 0.0, 0.0, 0.0
    first_cached = False
    for position, size in enumerate(sizes):
        read += max(1, size)
        target = max(1, round(final_words * read / total))
        if position == 0:
            text = _text(prompt("init")).format(chunks[0].text.strip(), target, target)
            first_cached = guide.cached(text, budget)
            prompts += (
                0 if first_cached else template_tokens(prompt("init"), "", target, target) + size
            )
        else:
            prompts += template_tokens(prompt("intermediate"), "", "", target, target)
            prompts += size + running
        expected = target / WORDS_PER_TOKEN
        if measured:
            running = guide.fill("incremental/update") * budget
        else:
            running = guide.pick("incremental/update answers", expected, 0.0, budget, guess)
        running = min(float(budget), running)
        answers += 0 if position == 0 and first_cached else running
    n = len(sizes) - first_cached
    phases = [
        Phase(
            "model",
            "incremental/update",
            n,
            prompts,
            answers,
            n,
            f"{n * (attempts + 1)} if every update needed {attempts} compression calls",
        )
    ]
    per_update = guide.history.calls_of("incremental/compress") / max(
        1, guide.history.calls_of("incremental/update")
    )
    if per_update:
        calls = n * per_update
        overhead = template_tokens(prompt("compress"), "", 0, 0, 0)
        phases.append(
            Phase(
                "model",
                "incremental/compress",
                calls,
                calls * (overhead + budget),
                calls * guide.completion("incremental/compress", budget * 0.6, ""),
                calls,
            )
        )
    if _on(params.get("postprocess", "remove_artifacts")):
        phases.append(_cleanup(prompt, running, guide))
    return phases


def baseline(
    chunks: list[Chunk], window: int, params: dict[str, Any], prompt: Prompt, guide: Guide
) -> list[Phase]:
    """One call: the document cut to what fits the window with the prompt and the budget."""
    budget = int(params.get("max_summary_len", 900))
    words = int(budget * float(params.get("words_per_token", 0.65)))
    overhead = template_tokens(prompt("summarize"), "", words)
    room = int(window * (1 - float(params.get("safety_margin", 0.1)))) - overhead - budget
    text = "".join(c.text for c in chunks)
    tokens = encode(text)
    kept = text if len(tokens) <= room else decode(tokens[: max(0, room)])
    if guide.cached(_text(prompt("summarize")).format(kept.strip(), words), budget):
        return []
    answer = guide.fill("baseline") * budget
    return [Phase("model", "baseline", 1, overhead + count_tokens(kept), answer, 1)]


def _cleanup(prompt: Prompt, summary: float, guide: Guide) -> Phase:
    """The M.3 clean-up of the final summary: its answer is about the summary's length."""
    overhead = template_tokens(prompt("remove_artifacts"))
    answer = guide.completion("postprocess", summary, "")
    return Phase("model", "postprocess", 1, overhead + summary, answer, 1)


def _on(postprocess: object) -> bool:
    return postprocess not in (None, False, "none", "null", "")
