"""BooookScore (Chang et al., ICLR 2024, section 4): sentences without a coherence error.

The share of a summary's sentences in which an LLM judge finds no coherence error, on a
0-100 scale.

The summary is split with the project's sentence splitter (NLTK Punkt, English); each
sentence is judged with the Appendix M.4 prompt (``metrics/prompts/booookscore/``), which
shows the judge the whole summary and the target sentence. A sentence is one unit however
many questions it raises, so

    score = 100 * sentences judged "no confusion" / sentences judged

and the system score is the runner's mean over documents. Sentences whose answer stayed
unreadable after ``max_attempts`` are counted, listed and left out of both numerator and
denominator: scoring them either way would bias the metric. A sentence repeated within a
summary is asked once and counted at each occurrence, as equation 1 of the paper reads.

Logged values (the runner prefixes ``booookscore/``): ``score``, ``sentences``,
``judged_sentences``, ``confused_sentences``, ``unparsed_sentences``, per-type rates
``type/<label>`` (sentences with that error / judged sentences, x100, the paper's
Figure 4; a sentence may carry several types), and judge accounting ``judge_calls``,
``judge_reasks``, ``judge_prompt_tokens``, ``judge_cached_prompt_tokens`` (served from the
provider's prefix cache, when it reports them), ``judge_completion_tokens``. The artifact
``annotations.json`` holds every sentence in the authors' format,
``{sentence: {"questions": str|null, "types": [..]|null}}``; an unreadable one also
carries ``"unparsed": true``, the ``"error"`` and the judge's last ``"answer"`` (null/null
alone would read as "no confusion" to the authors' scorer; the flag says otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from metrics import PROMPT_ROOT as PROMPT_ROOT  # prompts/ beside the package
from metrics.booookscore.estimate import estimate as estimate  # estimate=true counts it
from metrics.booookscore.feedback import on_trace
from metrics.booookscore.human import HUMAN as HUMAN  # people's format (runner.api)
from metrics.booookscore.judge import Ask, judge_all
from metrics.booookscore.meta import meta_tables as meta_tables  # report meta=true's tables
from metrics.booookscore.parse import LABELS, Verdict, type_key
from metrics.booookscore.prompt import BATCH_PROMPT, SENTENCE_PROMPT, Template, load_template
from metrics.booookscore.tasks import HUMAN_TASKS as HUMAN_TASKS  # Label Studio task kinds
from runner.api import LLM, ConfigError, Document, Metric, MetricResult, Value, split_sentences
from runner.api import Verdict as TraceVerdict  # not parse.Verdict, the judge's answer
from runner.api.judging import Usage

ARTIFACT = "annotations.json"


ROLES = ("judge",)
PROMPT_DIRS = ("booookscore",)
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
CATEGORIES = tuple((label, type_key(label)) for label in LABELS)
"""The paper's eight error types and their rates' names: the viewer's legend, the report's
Figure 4 (recorded on the run under the metric's label)."""
VALUES = {
    "score": Value(title="BooookScore", range=(0, 100), better="higher"),
    **{key: Value(title=f"% {label}", range=(0, 100), better="lower") for label, key in CATEGORIES},
    "sentences": Value(title="Sentences", kind="count"),
    "confused_sentences": Value(title="Confusing sentences", kind="count", better="lower"),
}
"""The paper's score: the share of sentences without a confusion, x100; each error type's
rate over the judged sentences."""


class BooookScore(Metric):
    """BooookScore with one judge and one prompt, both bound once per job."""

    headline = ("score",)
    read_back = tuple(key for _, key in CATEGORIES)
    """The per-type rates: the viewer's legend and the report's Figure 4 read them."""

    def __init__(
        self, judge: LLM, template: Template, batch_size: int, max_attempts: int, max_tokens: int
    ):
        """Bind the job's judge, prompt and options once (``setup`` builds it)."""
        self.judge = judge
        self.template = template
        self.batch_size = batch_size
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """The constant-judge warning (``constant_judge``)."""
        return constant_judge(self.judge.name, per_document)

    def verdicts(self, result: MetricResult) -> list[TraceVerdict]:
        """The judge's verdicts on the document's trace: each flagged sentence, the score."""
        return on_trace(result, ARTIFACT)

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Judge every distinct sentence of ``summary``; score, rates and annotations."""
        sentences = split_sentences(summary)
        if not sentences:
            return _undecided("booookscore: the summary has no sentences")
        ask = Ask(self.judge, self.template, summary, self.max_attempts, self.max_tokens)
        unique = list(dict.fromkeys(sentences))
        verdicts, usage = judge_all(ask, unique, self.batch_size)
        return MetricResult(
            values=aggregate(sentences, verdicts, usage),
            artifacts={ARTIFACT: {s: annotation(verdicts[s]) for s in unique}},
            notes=_notes(unique, verdicts, self.max_attempts),
        )


def constant_judge(judge: str, per_document: Mapping[str, MetricResult]) -> list[str]:
    """A warning when the judge flags no sentence, or every one, across a whole run.

    Such a judge is more likely broken (or its answers misread) than right.
    """
    judged = sum(r.values.get("judged_sentences", 0.0) for r in per_document.values())
    confused = sum(r.values.get("confused_sentences", 0.0) for r in per_document.values())
    if judged >= 5 and confused in (0, judged):
        which = "no sentence" if confused == 0 else "every sentence"
        return [
            f"judge={judge} flagged {which} of {judged:.0f} judged sentences: a constant answer is "
            "a sign of a broken judge or parser; read annotations.json before trusting the score"
        ]
    return []


def setup(
    judge: LLM,
    *,
    prompt_path: str | None = None,
    batch_prompt_path: str | None = None,
    batch_size: int = 1,
    max_attempts: int = 3,
    max_tokens: int = 256,
) -> BooookScore:
    """The metric for a job: parameters checked and the prompt parsed once.

    ``prompt_path`` replaces the M.4 prompt (e.g. the authors' full 42-annotation file);
    ``batch_size`` > 1 asks about that many numbered sentences per call with the
    ``batch_prompt_path`` prompt; ``max_attempts`` bounds the asks per sentence (or batch);
    ``max_tokens`` caps each answer (per sentence in batched mode).
    """
    _check(batch_size, max_attempts, max_tokens)
    if batch_size > 1:
        template = load_template(
            batch_prompt_path, BATCH_PROMPT, "metrics.booookscore.batch_prompt_path"
        )
    else:
        template = load_template(prompt_path, SENTENCE_PROMPT, "metrics.booookscore.prompt_path")
    return BooookScore(judge, template, batch_size, max_attempts, max_tokens)


def score(document: Document | None, summary: str, judge: LLM, **params: Any) -> MetricResult:
    """One summary scored with a freshly set-up metric (for scripts and tests)."""
    return setup(judge, **params).score(document, summary)


def aggregate(sentences: list[str], verdicts: dict[str, Verdict], usage: Usage) -> dict[str, float]:
    """The score, counts, per-type rates and judge accounting of one summary."""
    judged = [verdicts[s] for s in sentences if verdicts[s].parsed]
    confused = [v for v in judged if v.confused]
    n = len(judged)
    values = {
        "score": 100.0 * (n - len(confused)) / n if n else math.nan,
        "sentences": float(len(sentences)),
        "judged_sentences": float(n),
        "confused_sentences": float(len(confused)),
        "unparsed_sentences": float(len(sentences) - n),
    }
    for label in LABELS:
        hits = sum(1 for v in confused if label in (v.types or ()))
        values[type_key(label)] = 100.0 * hits / n if n else math.nan
    values.update(
        {
            "judge_calls": float(usage.calls),
            "judge_reasks": float(usage.reasks),
            "judge_prompt_tokens": float(usage.prompt_tokens),
            "judge_cached_prompt_tokens": float(usage.cached_prompt_tokens),
            "judge_completion_tokens": float(usage.completion_tokens),
        }
    )
    return values


def annotation(verdict: Verdict) -> dict[str, Any]:
    """One sentence in the authors' annotation format (null/null = no confusion)."""
    if not verdict.parsed:
        return {
            "questions": None,
            "types": None,
            "unparsed": True,
            "error": verdict.error,
            "answer": verdict.answer,
        }
    return {"questions": verdict.questions, "types": list(verdict.types) if verdict.types else None}


def _notes(unique: list[str], verdicts: dict[str, Verdict], max_attempts: int) -> tuple[str, ...]:
    bad = [s for s in unique if not verdicts[s].parsed]
    if not bad:
        return ()
    shown = "; ".join(f"{s[:60]!r}: {verdicts[s].error}" for s in bad[:5])
    more = f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""
    return (
        (
            f"booookscore: {len(bad)} of {len(unique)} distinct sentences unparsed after "
            f"{max_attempts} attempts, left out of the score (see annotations.json): {shown}{more}"
        ),
    )


def _undecided(note: str) -> MetricResult:
    values = {"score": math.nan, "sentences": 0.0, "judged_sentences": 0.0}
    return MetricResult(values=values, notes=(note,))


def _check(batch_size: int, max_attempts: int, max_tokens: int) -> None:
    for key, value in (
        ("batch_size", batch_size),
        ("max_attempts", max_attempts),
        ("max_tokens", max_tokens),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"metrics.booookscore.{key}={value} must be a whole number >= 1")
