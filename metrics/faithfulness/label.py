"""StorySumm's summary-level raters: one question (``binary``) or reasoning first (``cot``).

``binary`` sends the system prompt and one user message (story, summary, the question and
the answer-tags line), as the release's Claude branch does; ``cot`` first asks for a couple
of sentences of reasoning, then, in the same conversation after the judge's reasoning, the
follow-up question with the answer-tags line (two calls). The answer is Yes (faithful, 1.0)
or No (0.0) inside ``<answer></answer>`` or as the answer's first word; anything else is
NaN with a note.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from metrics.faithfulness.answers import yes_no
from metrics.faithfulness.prompts import Prompts
from runner.api import LLM, Completion, Message
from runner.api.judging import Usage

BINARY_PURPOSE = "faithfulness.binary"
REASON_PURPOSE = "faithfulness.cot_reasoning"
ANSWER_PURPOSE = "faithfulness.cot_answer"


@dataclass(frozen=True)
class Label:
    """One summary's label and what the judge said."""

    faithful: float
    answer: str
    reasoning: str = ""

    @property
    def notes(self) -> tuple[str, ...]:
        """Why the label is NaN (empty when it is decided)."""
        if not math.isnan(self.faithful):
            return ()
        return (f"faithfulness: the judge answered neither Yes nor No: {self.answer[:80]!r}",)


@dataclass(frozen=True)
class LabelJudge:
    """One judge with its answer settings, asking about whole summaries."""

    judge: LLM
    prompts: Prompts
    max_tokens: int
    reasoning_tokens: int
    temperature: float | None

    def binary(self, story: str, summary: str, usage: Usage) -> Label:
        """The just-question rater: one call."""
        done = self._call(self.prompts.binary(story, summary), self.max_tokens, BINARY_PURPOSE)
        usage.add(done, reask=False)
        return Label(_label(done.text), done.text)

    def cot(self, story: str, summary: str, usage: Usage) -> Label:
        """The chain-of-thought rater: reasoning, then the answer in the same conversation."""
        first = self.prompts.cot_reasoning(story, summary)
        reasoning = self._call(first, self.reasoning_tokens, REASON_PURPOSE)
        usage.add(reasoning, reask=False)
        follow = self.prompts.cot_answer(first, reasoning.text)
        done = self._call(follow, self.max_tokens, ANSWER_PURPOSE)
        usage.add(done, reask=False)
        return Label(_label(done.text), done.text, reasoning.text)

    def _call(self, messages: list[Message], max_tokens: int, purpose: str) -> Completion:
        return self.judge.complete(
            messages, max_tokens=max_tokens, temperature=self.temperature, purpose=purpose
        )


def _label(text: str) -> float:
    said = yes_no(text)
    return math.nan if said is None else float(said)
