"""Calls of the loops that judge a summary: BooookScore's judge, SummIt's evaluate/refine.

BooookScore asks one call per distinct sentence (``batch_size`` sentences per call when
batched; ``metrics/booookscore/judge.py``): exact for summaries given by ``data=summaries``
(split with the project's sentence splitter, as the metric does), expected from the
summary's estimated length otherwise, at a guessed sentence length between two bounds.
SummIt (``strategies/summit*.py``) is counted at its iteration cap, the dear end of its range
(it stops early on ``<STOP>``, Keep-only feedback or an unchanged revision: one round at the
cheap end).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.estimate.guide import JUDGE_ANSWER_TOKENS, SENTENCE_BOUNDS, SENTENCE_TOKENS, Guide
from runner.estimate.shapes import Phase
from runner.text import count_tokens, split_sentences
from runner.types import Message

JUDGE_STOP = ("\n[", "\n---")
"""The stop sequences of a per-sentence ask (``metrics/booookscore_judge.STOP``; a test keeps
them equal): part of the request, so of its cache key."""


@dataclass(frozen=True)
class Slots:
    """A two-slot prompt cut around its slots (``metrics/booookscore_prompt.Template``)."""

    head: str
    middle: str
    tail: str

    @classmethod
    def read(cls, path: Path) -> Slots:
        """The prompt file at ``path`` cut at its two ``{}`` slots."""
        text = path.read_text(encoding="utf-8").rstrip("\n")
        literals = [""]
        for literal, name, _, _ in string.Formatter().parse(text):
            literals[-1] += literal
            if name is not None:
                literals.append("")
        literals += [""] * (3 - len(literals))
        return cls(literals[0], literals[1], literals[2])


def booookscore(
    summary: str | None, expected: float, params: dict[str, Any], prompt: Path, guide: Guide
) -> Phase:
    """The judge's calls for one summary: given (exact count) or of ``expected`` tokens."""
    slots = Slots.read(prompt)
    batch = max(1, int(params.get("batch_size", 1)))
    attempts = int(params.get("max_attempts", 3))
    cap = int(params.get("max_tokens", 256))
    answer = guide.completion(
        "booookscore",
        JUDGE_ANSWER_TOKENS,
        f"a verdict is ~{JUDGE_ANSWER_TOKENS:.0f} tokens",
        cap=cap * batch,
    )
    if summary is not None:
        sentences = list(dict.fromkeys(split_sentences(summary)))
        groups = [sentences[i : i + batch] for i in range(0, len(sentences), batch)]
        groups = [g for g in groups if not _cached(slots, summary, g, batch, cap, guide)]
        shared = count_tokens(f"{slots.head}{summary}")
        asks = [_ask(slots, group, batch) for group in groups]
        units, prompts = float(len(groups)), float(sum(shared + a for a in asks))
        answers = sum(answer * len(group) for group in groups)
    else:
        dear, cheap = SENTENCE_BOUNDS
        text = f"guess ~{SENTENCE_TOKENS:.0f} tokens (bounds: {dear:.0f}-{cheap:.0f}), one ask each"
        sentence = guide.pick("summary sentences", SENTENCE_TOKENS, cheap, dear, text)
        count = max(1.0, round(expected / sentence))
        units = float(math.ceil(count / batch))
        per = count_tokens(f"{slots.middle}{slots.tail}") + expected / count * min(batch, count)
        prompts = units * (count_tokens(slots.head) + expected + per)
        answers = answer * count
    retry = guide.retries("booookscore")
    conc = guide.concurrency
    rounds = units if conc <= 1 else 1 + math.ceil(max(0.0, units - 1) / conc)
    return Phase(
        "judge",
        "booookscore",
        units * (1 + retry),
        prompts * (1 + retry),
        answers * (1 + retry),
        rounds * (1 + retry),
        f"{units * attempts:.0f} if every answer were re-asked (max_attempts={attempts})",
    )


def _item(slots: Slots, group: list[str], batch: int) -> str:
    """The per-sentence (or per-batch) message (``Template.messages``' second)."""
    item = group[0] if batch <= 1 else "\n".join(f"{n}. {s}" for n, s in enumerate(group, 1))
    return f"{slots.middle}{item}{slots.tail}".lstrip("\n")


def _ask(slots: Slots, group: list[str], batch: int) -> int:
    """Tokens of the per-sentence (or per-batch) message."""
    return count_tokens(_item(slots, group, batch))


def _cached(
    slots: Slots, summary: str, group: list[str], batch: int, cap: int, guide: Guide
) -> bool:
    """Whether the cache answers the first ask about ``group`` (as the judge sends it)."""
    messages = [
        Message("user", f"{slots.head}{summary}", cache=True),
        Message("user", _item(slots, group, batch)),
    ]
    if batch <= 1:
        return guide.cached(messages, cap, JUDGE_STOP)
    return guide.cached(messages, cap * len(group))


def summit(
    source: float, draft: list[Phase], params: dict[str, Any], model: Guide, evaluator: Guide
) -> list[Phase]:
    """The draft, then ``max_iterations`` evaluations and one revision fewer (the cap).

    ``source``: tokens of what both roles see of the document (the text, or what of it fits).
    """
    most = int(params.get("max_iterations", 5))
    text = f"counted at max_iterations={most} (bounds: 1-{most}; it stops early on <STOP>)"
    iterations = round(model.pick("summit rounds", most, 1, most, text))
    budget = int(params.get("max_summary_len", 900))
    summary = model.fill("summit/refine") * budget
    eval_cap = float(params.get("eval_max_tokens", 512))
    feedback = evaluator.completion(
        "summit/evaluate", eval_cap * 0.6, "feedback at 60% of eval_max_tokens", cap=eval_cap
    )
    cap = f"at most; stops early on <STOP> or Keep-only feedback (max_iterations={most})"
    return [
        *draft,
        Phase(
            "evaluator",
            "summit/evaluate",
            iterations,
            iterations * (source + summary + 400),
            iterations * feedback,
            iterations,
            cap,
        ),
        Phase(
            "model",
            "summit/refine",
            iterations - 1,
            (iterations - 1) * (source + summary + feedback + 300),
            (iterations - 1) * summary,
            iterations - 1,
            cap,
        ),
    ]
