"""F1 (or F-beta) of alignment and coverage.

The seed-003 article's replacement for DeepEval's ``min(alignment, coverage)``, under which
a drop in faithfulness went unseen whenever coverage was lower (it usually is).

    F_beta = (1 + beta^2) * P * R / (beta^2 * P + R),   P = alignment, R = coverage

beta > 1 weighs coverage more, beta < 1 alignment more (the article's "upweight precision
if hallucination is to be avoided at all costs"). NaN when either is NaN; 0 when both are 0.

Composition: ``setup`` builds its own alignment and coverage metrics (the modules the registry
gives for those names, ``runner.api.plugin``, as a researcher's metric would compose them) from
the same parameters those metrics take (one flat list: the shared ones, ``max_tokens`` etc.,
apply to both), so ``metrics=[f1]`` alone gives all three numbers. Composed beside
``alignment`` and ``coverage`` with the same parameters, f1 repeats byte-identical judge
requests, which the gateway's response cache serves without a model call (the runner scores a
document's metrics one after another; tests/metrics/test_f1.py checks every f1 call is a cache
hit). With different parameters, or with the cache off, the calls are paid twice. The values
are f1's own run of both metrics, so they equal the composed ones exactly in the cached case.

Values: ``f1`` (``f_beta`` when beta != 1), every alignment and coverage value, and the
judge accounting of both summed. The system value is the mean of per-document F scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from runner.api import LLM, Document, Metric, MetricResult, Value, plugin
from runner.api.asking import check_float
from runner.api.judging import Usage

ROLES = ("judge",)
KEY = "metrics.f1"
PROMPT_DIRS = ("alignment", "coverage")
"""The ``metrics/prompts/`` folders this metric reads (it has none of its own), for the
run's prompt artifacts and fingerprint (runner/config/fingerprint.py must honour it)."""


def f_beta(precision: float, recall: float, beta: float = 1.0) -> float:
    """Weighted harmonic mean of precision and recall; NaN when either is NaN."""
    if math.isnan(precision) or math.isnan(recall):
        return math.nan
    b2 = beta * beta
    denominator = b2 * precision + recall
    return (1 + b2) * precision * recall / denominator if denominator else 0.0


class F1(Metric):
    """Alignment and coverage of one summary, and their F-beta."""

    def __init__(
        self, align: Metric, cover: Metric, beta: float, components: Mapping[str, Value]
    ) -> None:
        """Bind both component metrics, beta and their value facts; the name says which F."""
        self.align, self.cover, self.beta = align, cover, beta
        self.name = "f1" if beta == 1 else "f_beta"
        self.headline = (self.name,)
        title = "F1" if beta == 1 else f"F{beta:g}"
        self.values = {
            **components,
            self.name: Value(title=f"{title} (alignment, coverage)", range=(0, 1), better="higher"),
        }

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Both component metrics, then their F-beta."""
        a = self.align.score(document, summary)
        c = self.cover.score(document, summary)
        judge_keys = set(Usage().values())
        values = {k: v for k, v in {**a.values, **c.values}.items() if k not in judge_keys}
        for key in sorted(judge_keys):
            values[key] = a.values.get(key, 0.0) + c.values.get(key, 0.0)
        values[self.name] = f_beta(a.values["alignment"], c.values["coverage"], self.beta)
        notes = a.notes + c.notes
        if math.isnan(values[self.name]):
            notes += (f"{self.name}: NaN because alignment or coverage is NaN",)
        return MetricResult(values=values, artifacts={**a.artifacts, **c.artifacts}, notes=notes)


def setup(
    judge: LLM,
    *,
    beta: float = 1.0,
    claims_prompt_path: str | None = None,
    verdict_prompt_path: str | None = None,
    chunk_tokens: int = 512,
    questions_prompt_path: str | None = None,
    answer_prompt_path: str | None = None,
    score_prompt_path: str | None = None,
    n_questions: int = 10,
    room_tokens: int = 256,
    max_attempts: int = 3,
    max_tokens: int = 1024,
    temperature: float | None = None,
) -> F1:
    """The metric for a job (parameters as in ``conf/metrics/f1.yaml``)."""
    check_float(f"{KEY}.beta", beta, 0.0, 100.0, low_open=True)
    alignment, coverage = plugin("metrics", "alignment"), plugin("metrics", "coverage")
    align = alignment.build(
        judge,
        KEY,
        claims_prompt_path=claims_prompt_path,
        verdict_prompt_path=verdict_prompt_path,
        chunk_tokens=chunk_tokens,
        room_tokens=room_tokens,
        max_attempts=max_attempts,
        max_tokens=max_tokens,
        temperature=temperature,
    )
    cover = coverage.build(
        judge,
        KEY,
        questions_prompt_path=questions_prompt_path,
        answer_prompt_path=answer_prompt_path,
        score_prompt_path=score_prompt_path,
        n_questions=n_questions,
        room_tokens=room_tokens,
        max_attempts=max_attempts,
        max_tokens=max_tokens,
        temperature=temperature,
    )
    components = {**getattr(alignment, "VALUES", {}), **getattr(coverage, "VALUES", {})}
    return F1(align, cover, float(beta), components)
