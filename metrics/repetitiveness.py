"""Repetitiveness ("How to Evaluate LLM Summarization", Towards Data Science, 2025).

The article builds it with DeepEval's G-Eval from one criterion (kept verbatim in
``metrics/prompts/repetitiveness/judge.txt``, its stray fragment included): the judge
returns 1 when the summary has no unnecessarily repetitive information and 0 when it has,
with its reasoning. The article warns that the answer is unstable (the same input flips
between runs), so we ask ``n_samples`` times at ``temperature``, each sample its own cache
slot, and report the share of samples that call the summary repetitive together with
the spread of those verdicts.

Values (prefixed ``repetitiveness/``): ``repetitive_share`` (samples saying the summary IS
repetitive / parsed samples; 0..1, **lower is better**), ``repetitiveness_std`` (the
population standard deviation of the 0/1 "is repetitive" verdicts, sqrt(p(1-p)): 0 when
the judge agrees with itself, 0.5 at worst), ``samples`` (asked), ``unparsed_samples``
(left out of both) and the judge accounting. Artifact ``repetitiveness.json``: each
sample's verdict and reasoning.
"""

from __future__ import annotations

import functools
import math
import statistics
from pathlib import Path
from typing import Any

from runner.api import LLM, ConfigError, Document, Metric, MetricResult, Value
from runner.api.judging import Answer, Usage, ask_json, key_of, run_units
from runner.api.slots import SlotTemplate, load_slots

ROLES = ("judge",)
PROMPT_DIRS = ("repetitiveness",)
VALUES = {
    "repetitive_share": Value(title="Repetitive (share of samples)", range=(0, 1), better="lower")
}
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
PURPOSE = "repetitiveness"
PROMPT = Path(__file__).parent / "prompts" / "repetitiveness" / "judge.txt"


def check_verdict(data: Any) -> tuple[Any, str]:
    """{"score": 1|0, "reason": ...} -> (score, reason); the criterion's 1 = NOT repetitive."""
    raw = key_of(data, "score", "verdict", "result")
    score = None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw in (0, 1):
        score = int(raw)
    elif isinstance(raw, str) and raw.strip() in ("0", "1"):
        score = int(raw.strip())
    if score is None:
        return None, f'"score" must be 1 (no unnecessary repetition) or 0, not {raw!r}'
    reason = key_of(data, "reason", "reasoning")
    return (score, "" if reason is None else str(reason)), ""


class Repetitiveness(Metric):
    """The sampled binary repetition judgement, with its spread."""

    headline = ("repetitive_share",)

    def __init__(
        self,
        judge: LLM,
        template: SlotTemplate,
        n_samples: int,
        temperature: float | None,
        max_attempts: int,
        max_tokens: int,
    ) -> None:
        """Bind the job's judge, prompt and sampling options once (``setup`` builds it)."""
        self.judge, self.template, self.n_samples = judge, template, n_samples
        self.temperature, self.max_attempts, self.max_tokens = temperature, max_attempts, max_tokens

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """``n_samples`` verdicts on ``summary``, run concurrently; share and spread."""
        if not summary.strip():
            return MetricResult(
                values={"repetitive_share": math.nan, "samples": 0.0},
                notes=("repetitiveness: the summary is empty",),
            )
        units = [functools.partial(self._sample, summary, i) for i in range(self.n_samples)]
        usage = Usage()
        answers = []
        for answer, spent in run_units(units, self.judge):
            answers.append(answer)
            usage.merge(spent)
        repetitive = [answer.value[0] == 0 for answer in answers if answer.parsed]
        values = spread(repetitive, len(answers))
        values.update(usage.values())
        notes: tuple[str, ...] = ()
        if len(repetitive) < len(answers):
            first = next(a.error for a in answers if not a.parsed)
            lost = len(answers) - len(repetitive)
            notes = (f"repetitiveness: {lost} of {len(answers)} samples unparsed ({first})",)
        records = [_record(i, a) for i, a in enumerate(answers)]
        return MetricResult(values=values, notes=notes, artifacts={"repetitiveness.json": records})

    def _sample(self, summary: str, index: int) -> tuple[Answer, Usage]:
        usage = Usage()
        answer = ask_json(
            self.judge,
            self.template.messages({"summary": summary}, shared=("summary",)),
            check_verdict,
            usage,
            purpose=PURPOSE,
            max_attempts=self.max_attempts,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            sample_offset=index * self.max_attempts,  # re-asks never share a sample's cache slot
        )
        return answer, usage


def spread(repetitive: list[bool], asked: int) -> dict[str, float]:
    """Share of 'repetitive' verdicts and their population std dev over the parsed samples."""
    ones = [1.0 if r else 0.0 for r in repetitive]
    return {
        "repetitive_share": sum(ones) / len(ones) if ones else math.nan,
        "repetitiveness_std": statistics.pstdev(ones) if ones else math.nan,
        "samples": float(asked),
        "unparsed_samples": float(asked - len(ones)),
    }


def _record(index: int, answer: Answer) -> dict[str, Any]:
    if not answer.parsed:
        return {
            "sample": index,
            "repetitive": None,
            "unparsed": True,
            "error": answer.error,
            "answer": answer.raw,
        }
    score, reason = answer.value
    return {"sample": index, "repetitive": score == 0, "score": score, "reason": reason}


def setup(
    judge: LLM,
    *,
    n_samples: int = 5,
    temperature: float | None = 1.0,
    max_attempts: int = 3,
    max_tokens: int = 512,
    prompt_path: str | None = None,
) -> Repetitiveness:
    """The metric for a job: parameters and the prompt (slot ``{summary}``) checked once.

    ``temperature`` None = the judge's own; ``max_attempts`` bounds the calls per sample.
    """
    for key, value in (
        ("n_samples", n_samples),
        ("max_attempts", max_attempts),
        ("max_tokens", max_tokens),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"metrics.repetitiveness.{key}={value} must be a whole number >= 1")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not 0 <= temperature <= 2
    ):
        raise ConfigError(f"metrics.repetitiveness.temperature={temperature}: null or 0..2")
    template = load_slots(prompt_path, PROMPT, "metrics.repetitiveness.prompt_path", ["summary"])
    chosen = None if temperature is None else float(temperature)
    return Repetitiveness(judge, template, n_samples, chosen, max_attempts, max_tokens)
