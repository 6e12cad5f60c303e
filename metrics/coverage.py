"""Coverage (recall) as the seed-003 article rebuilds DeepEval's.

DeepEval asked yes/no questions whose answer was always "yes", easy to hallucinate from
any summary. The article asks open-ended questions instead, each with a reference answer
and an importance, and scores the summary's answer 0-5 against the reference:

1. Questions come from the source (``prompts/coverage/questions.txt``, the article's
   prompt asking for JSON). A source too long for one call (``judge.context_window``
   minus the prompt, ``max_tokens`` and ``room_tokens``) is cut with ``runner.api.chunking``
   and the ``n_questions`` are allocated across its chunks in proportion to their token
   counts (largest remainder: each chunk gets ``floor(n * len / total)``, the questions
   left go to the largest remainders, the earlier chunk first on ties); each chunk's
   questions are generated from that chunk alone. The request depends only on the source
   and the parameters, so the gateway's response cache serves it for every other summary
   of the document: the questions are identical across the summaries compared.
2. Each question is answered from the summary alone (``answer.txt``: instructions and the
   summary as the cached prefix, the question last); "idk" is allowed.
3. Each answer is scored 0-5 against the reference (``score.txt``, the article's prompt for
   one answer); an "idk" scores 0 without a call.

``coverage`` = mean(score / 5); ``coverage_weighted`` = the importance-weighted mean.
Questions whose answer or score stayed unreadable after ``max_attempts``, and those of a
chunk whose questions did, are counted in ``unparsed_questions`` and left out.
Artifact ``coverage.json``: per question
``{question, reference_answer, importance, chunk, summary_answer, score, reason}``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import partial
from typing import Any

from metrics import PROMPT_ROOT
from runner.api import LLM, Chunk, Document, Metric, MetricResult, Value, split_into_chunks
from runner.api.asking import (
    Asker,
    Prompt,
    check_int,
    judge_settings,
    load_prompt,
    nan_result_values,
    source_budget,
)
from runner.api.judging import Usage, run_units
from runner.api.questions import check_answer, check_questions, check_score, is_idk

ROLES = ("judge",)
PROMPT_DIRS = ("coverage",)
VALUES = {
    "coverage": Value(title="Coverage", range=(0, 1), better="higher"),
    "coverage_weighted": Value(title="Coverage (weighted)", range=(0, 1), better="higher"),
}
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
ARTIFACT = "coverage.json"
PROMPTS = PROMPT_ROOT / "coverage"
QUESTION_SLOTS = ("n", "text")


@dataclass(frozen=True)
class Question:
    """One generated question with its reference answer."""

    question: str
    reference_answer: str
    importance: int
    chunk: int


def allocate(n: int, lengths: list[int]) -> list[int]:
    """``n`` questions over chunks in proportion to their lengths (largest remainder)."""
    if not lengths:
        return []
    total = sum(lengths)
    if total <= 0:
        lengths, total = [1] * len(lengths), len(lengths)
    counts = [n * length // total for length in lengths]
    remainders = [n * length % total for length in lengths]
    order = sorted(range(len(lengths)), key=lambda i: (-remainders[i], i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


class Coverage(Metric):
    """Source questions answered from the summary; bound to one judge per job."""

    headline = ("coverage", "coverage_weighted")

    def __init__(self, asker: Asker, prompts: dict[str, Prompt], budget: int, n_questions: int):
        """Bind the job's judge, prompts, budget and question count once (``setup``)."""
        self.asker, self.prompts, self.budget, self.n_questions = (
            asker,
            prompts,
            budget,
            n_questions,
        )

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Coverage of ``document``'s text by ``summary`` (NaN with a note when undecidable)."""
        usage = Usage()
        if document is None or not document.text.strip():
            return _undecided("coverage: no source text to ask questions about", usage)
        questions, missing = self.questions(document.text, usage)
        if not questions:
            return _undecided(
                f"coverage: no readable questions from the source ({missing} unparsed)", usage
            )
        usages = [Usage() for _ in questions]
        units = [
            partial(self.answer, q, summary, u) for q, u in zip(questions, usages, strict=True)
        ]
        rows = run_units(units, self.asker.judge)
        for unit_usage in usages:
            usage.merge(unit_usage)
        return MetricResult(
            values=aggregate(rows, missing, usage),
            artifacts={ARTIFACT: rows},
            notes=_notes(rows, missing),
        )

    def chunks(self, source: str) -> list[Chunk]:
        """The source whole when it fits one call, else chunks of at most the budget."""
        n_tokens = self.asker.judge.count_tokens(source)
        return (
            [Chunk(0, source, n_tokens)]
            if n_tokens <= self.budget
            else split_into_chunks(source, self.budget)
        )

    def questions(self, source: str, usage: Usage) -> tuple[list[Question], int]:
        """All questions of the source, and how many allocated ones stayed unreadable."""
        chunks = self.chunks(source)
        work = [
            (c, n)
            for c, n in zip(
                chunks, allocate(self.n_questions, [c.n_tokens for c in chunks]), strict=True
            )
            if n
        ]
        usages = [Usage() for _ in work]
        units = [partial(self.generate, c, n, u) for (c, n), u in zip(work, usages, strict=True)]
        found = run_units(units, self.asker.judge)
        for unit_usage in usages:
            usage.merge(unit_usage)
        missing = sum(n for (_, n), qs in zip(work, found, strict=True) if qs is None)
        return [q for qs in found if qs for q in qs], missing

    def generate(self, chunk: Chunk, n: int, usage: Usage) -> list[Question] | None:
        """Up to ``n`` questions from one chunk (None when unreadable)."""
        messages = self.prompts["questions"].messages(n=n, text=chunk.text)
        answer = self.asker.ask(messages, check_questions, usage, "coverage.questions")
        if not answer.parsed:
            return None
        return [Question(q, a, imp, chunk.index) for q, a, imp in answer.value[:n]]

    def answer(self, q: Question, summary: str, usage: Usage) -> dict[str, Any]:
        """One question's artifact row: the summary's answer and its 0-5 score."""
        row: dict[str, Any] = {
            "question": q.question,
            "reference_answer": q.reference_answer,
            "importance": q.importance,
            "chunk": q.chunk,
            "summary_answer": None,
            "score": None,
            "reason": "",
        }
        messages = self.prompts["answer"].messages(summary=summary, question=q.question)
        reply = self.asker.ask(messages, check_answer, usage, "coverage.answer")
        if not reply.parsed:
            return {**row, "unparsed": True, "error": reply.error, "answer": reply.raw}
        row["summary_answer"] = reply.value
        if is_idk(reply.value):
            return {**row, "score": 0.0, "reason": "idk: scored 0 without a call"}
        pair = json.dumps(
            {"original_answer": q.reference_answer, "summary_answer": reply.value},
            ensure_ascii=False,
        )
        verdict = self.asker.ask(
            self.prompts["score"].messages(answers=pair), check_score, usage, "coverage.score"
        )
        if not verdict.parsed:
            return {**row, "unparsed": True, "error": verdict.error, "answer": verdict.raw}
        return {**row, "score": verdict.value[0], "reason": verdict.value[1]}


def aggregate(rows: list[dict[str, Any]], missing: int, usage: Usage) -> dict[str, float]:
    """Coverage, importance-weighted coverage, counts and judge accounting of one summary."""
    scored = [r for r in rows if r["score"] is not None]
    weight = sum(r["importance"] for r in scored)
    return {
        "coverage": sum(r["score"] / 5 for r in scored) / len(scored) if scored else math.nan,
        "coverage_weighted": (
            sum(r["importance"] * r["score"] / 5 for r in scored) / weight if weight else math.nan
        ),
        "questions": float(len(rows)),
        "idk_answers": float(
            sum(1 for r in rows if r["summary_answer"] and is_idk(r["summary_answer"]))
        ),
        "unparsed_questions": float(len(rows) - len(scored) + missing),
        **usage.values(),
    }


def _notes(rows: list[dict[str, Any]], missing: int) -> tuple[str, ...]:
    bad = [r for r in rows if r["score"] is None]
    if not bad and not missing:
        return ()
    shown = "; ".join(f"{r['question'][:60]!r}: {r['error']}" for r in bad[:5])
    note = (
        f"coverage: {len(bad)} answers and {missing} allocated questions unparsed, left out of "
        f"the score (see {ARTIFACT}) {shown}"
    )
    return (note.rstrip(),)


def _undecided(note: str, usage: Usage) -> MetricResult:
    values = nan_result_values(("coverage", "coverage_weighted"), usage)
    values.update(questions=0.0)
    return MetricResult(values=values, notes=(note,))


def build(
    judge: LLM,
    key: str,
    *,
    questions_prompt_path: str | None,
    answer_prompt_path: str | None,
    score_prompt_path: str | None,
    n_questions: int,
    room_tokens: int,
    max_attempts: int,
    max_tokens: int,
    temperature: float | None,
) -> Coverage:
    """The metric with its parameters checked under config key ``key`` (f1 builds one too)."""
    asker = judge_settings(key, judge, max_attempts, max_tokens, temperature, room_tokens)
    check_int(f"{key}.n_questions", n_questions, 1)
    prompts = {
        "questions": load_prompt(
            questions_prompt_path,
            PROMPTS / "questions.txt",
            f"{key}.questions_prompt_path",
            QUESTION_SLOTS,
        ),
        "answer": load_prompt(
            answer_prompt_path,
            PROMPTS / "answer.txt",
            f"{key}.answer_prompt_path",
            ("summary", "question"),
            ("summary",),
        ),
        "score": load_prompt(
            score_prompt_path, PROMPTS / "score.txt", f"{key}.score_prompt_path", ("answers",)
        ),
    }
    budget = source_budget(judge, prompts["questions"], max_tokens, room_tokens, key)
    return Coverage(asker, prompts, budget, n_questions)


def setup(
    judge: LLM,
    *,
    questions_prompt_path: str | None = None,
    answer_prompt_path: str | None = None,
    score_prompt_path: str | None = None,
    n_questions: int = 10,
    room_tokens: int = 256,
    max_attempts: int = 3,
    max_tokens: int = 1024,
    temperature: float | None = None,
) -> Coverage:
    """The metric for a job (parameters as in ``conf/metrics/coverage.yaml``)."""
    return build(
        judge,
        "metrics.coverage",
        questions_prompt_path=questions_prompt_path,
        answer_prompt_path=answer_prompt_path,
        score_prompt_path=score_prompt_path,
        n_questions=n_questions,
        room_tokens=room_tokens,
        max_attempts=max_attempts,
        max_tokens=max_tokens,
        temperature=temperature,
    )
