"""Sentence vagueness ("How to Evaluate LLM Summarization", Towards Data Science, 2025).

The article penalizes sentences that talk about the text instead of stating its points
("this summary describes the reasons for China's AI policy", "the article suggests ..."):
the summary is split into sentences and an LLM classifies each as vague or not; the score
is the share of vague sentences, so **lower is better** (hence the name ``vague_share``).

As in the article, the numbered sentences go to the judge in one call with a structured
answer (``{"sentences": [{"sentence_id", "is_vague", "reason"}]}``, read by
``runner.api.judging.ask_json``); ``batch_size`` > 0 sends that many per call instead, the
calls of one summary running concurrently. Sentences missing from an answer are asked again,
alone, within ``max_attempts`` calls per batch; those still missing are counted as
unparsed and left out of the share, never scored.

Values (prefixed ``vagueness/``): ``vague_share`` = vague / judged sentences,
``vague_sentences``, ``judged_sentences``, ``sentences``, ``unparsed_sentences`` and the
judge accounting. Artifact ``vagueness.json``: per sentence {sentence, is_vague, reason}.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.api import (
    LLM,
    ConfigError,
    Document,
    Message,
    Metric,
    MetricResult,
    Value,
    split_sentences,
)
from runner.api.judging import Check, Usage, as_list, ask_json, key_of, run_units
from runner.api.slots import SlotTemplate, load_slots

ROLES = ("judge",)
PROMPT_DIRS = ("vagueness",)
VALUES = {"vague_share": Value(title="Vague sentences (share)", range=(0, 1), better="lower")}
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
PURPOSE = "vagueness"
PROMPT = Path(__file__).parent / "prompts" / "vagueness" / "batch.txt"
"""The article's prompt verbatim, its '...' replaced by a JSON answer format and the input."""


@dataclass(frozen=True)
class Verdict:
    """The judge's call on one sentence; ``is_vague`` None when unparsed."""

    is_vague: bool | None
    reason: str = ""
    error: str = ""


def truth(value: Any) -> bool | None:
    """true/false as models write it: a bool, 'true'/'yes'/'vague', 0/1; None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "yes", "vague", "1"):
            return True
        if word in ("false", "no", "not vague", "0"):
            return False
    return None


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(str(value).strip().rstrip("."))
    except ValueError:
        return None


def batch_check(count: int) -> Check:
    """Accept an answer with at least one usable entry among sentences 1..count."""

    def check(data: Any) -> tuple[Any, str]:
        items = as_list(data, "sentences", "verdicts", "results")
        if items is None:
            return None, 'expected {"sentences": [...]}'
        found: dict[int, Verdict] = {}
        for item in items:
            number = _number(key_of(item, "sentence_id", "id", "sentence_num", "number"))
            vague = truth(key_of(item, "is_vague", "vague"))
            if number is None or not 1 <= number <= count or vague is None:
                continue
            reason = key_of(item, "reason", "reasoning")
            found.setdefault(number, Verdict(vague, "" if reason is None else str(reason)))
        if not found:
            return None, f"no entry with a sentence_id in 1..{count} and a true/false is_vague"
        return found, ""

    return check


class Vagueness(Metric):
    """The share of vague sentences, with one judge and one prompt bound per job."""

    headline = ("vague_share",)

    def __init__(
        self,
        judge: LLM,
        template: SlotTemplate,
        batch_size: int,
        max_attempts: int,
        max_tokens: int,
    ) -> None:
        """Bind the job's judge, prompt and batching options once (``setup`` builds it)."""
        self.judge, self.template = judge, template
        self.batch_size, self.max_attempts, self.max_tokens = batch_size, max_attempts, max_tokens

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Judge every sentence of ``summary``; the share of vague ones."""
        sentences = split_sentences(summary)
        if not sentences:
            values = {"vague_share": math.nan, "sentences": 0.0, "judged_sentences": 0.0}
            return MetricResult(values=values, notes=("vagueness: the summary has no sentences",))
        size = self.batch_size or len(sentences)
        starts = range(0, len(sentences), size)
        groups = [list(range(i, min(i + size, len(sentences)))) for i in starts]
        units = [functools.partial(self._judge_group, sentences, g) for g in groups]
        verdicts: dict[int, Verdict] = {}
        usage = Usage()
        for found, spent in run_units(units, self.judge):
            verdicts.update(found)
            usage.merge(spent)
        return MetricResult(
            values=_values(verdicts, usage),
            artifacts={
                "vagueness.json": [
                    _annotation(sentences[i], verdicts[i]) for i in range(len(sentences))
                ]
            },
            notes=_notes(verdicts),
        )

    def _judge_group(
        self, sentences: list[str], group: list[int]
    ) -> tuple[dict[int, Verdict], Usage]:
        """One batch; sentences an answer misses are asked again, within ``max_attempts`` calls."""
        usage, pending, spent, error = Usage(), list(group), 0, "not asked"
        verdicts: dict[int, Verdict] = {}
        while pending and spent < self.max_attempts:
            listing = "\n".join(f"{n}. {sentences[i]}" for n, i in enumerate(pending, start=1))
            before = usage.calls
            answer = ask_json(
                self.judge,
                [Message("user", self.template.fill({"sentences": listing}))],
                batch_check(len(pending)),
                usage,
                purpose=PURPOSE,
                max_attempts=self.max_attempts - spent,
                max_tokens=self.max_tokens * len(pending),
                temperature=None,  # the judge's own (judge.temperature), as recorded
                sample_offset=spent,
            )
            if spent and usage.calls > before:
                usage.reasks += 1  # asking again for missing sentences is a re-ask too
            spent += max(1, usage.calls - before)
            if not answer.parsed:
                error = answer.error
                break
            verdicts.update({pending[n - 1]: v for n, v in answer.value.items()})
            pending = [i for i in pending if i not in verdicts]
            error = "missing from every answer of the judge"
        verdicts.update({i: Verdict(None, "", error) for i in pending})
        return verdicts, usage


def _values(verdicts: dict[int, Verdict], usage: Usage) -> dict[str, float]:
    judged = [v for v in verdicts.values() if v.is_vague is not None]
    vague = sum(1 for v in judged if v.is_vague)
    return {
        "vague_share": vague / len(judged) if judged else math.nan,
        "vague_sentences": float(vague),
        "judged_sentences": float(len(judged)),
        "sentences": float(len(verdicts)),
        "unparsed_sentences": float(len(verdicts) - len(judged)),
        **usage.values(),
    }


def _annotation(sentence: str, verdict: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {
        "sentence": sentence,
        "is_vague": verdict.is_vague,
        "reason": verdict.reason,
    }
    if verdict.is_vague is None:
        out.update(unparsed=True, error=verdict.error)
    return out


def _notes(verdicts: dict[int, Verdict]) -> tuple[str, ...]:
    bad = [v for v in verdicts.values() if v.is_vague is None]
    if not bad:
        return ()
    share = "; vague_share is NaN" if len(bad) == len(verdicts) else ", left out of vague_share"
    return (f"vagueness: {len(bad)} of {len(verdicts)} sentences unparsed ({bad[0].error}){share}",)


def setup(
    judge: LLM,
    *,
    batch_size: int = 0,
    max_attempts: int = 3,
    max_tokens: int = 100,
    prompt_path: str | None = None,
) -> Vagueness:
    """The metric for a job: parameters and the prompt (slot ``{sentences}``) checked once.

    ``batch_size`` 0 = every sentence in one call (the article); ``max_attempts`` bounds the
    calls per batch, re-asks included; ``max_tokens`` is per sentence of a batch.
    """
    for key, value, least in (
        ("batch_size", batch_size, 0),
        ("max_attempts", max_attempts, 1),
        ("max_tokens", max_tokens, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigError(f"metrics.vagueness.{key}={value} must be a whole number >= {least}")
    template = load_slots(prompt_path, PROMPT, "metrics.vagueness.prompt_path", ["sentences"])
    return Vagueness(judge, template, batch_size, max_attempts, max_tokens)
