"""Faithfulness (StorySumm, FABLES raters): is the summary true to its source?

``metrics.faithfulness.method`` picks the rater, each with the release's own prompts
(``prompts/faithfulness/``, copied verbatim; ``SOURCE.md`` there cites files and licence):

- ``binary``: StorySumm's "just question" rater, one call per summary (``label.py``);
- ``cot``: StorySumm's chain-of-thought rater, reasoning then the answer (two calls);
- ``claims``: FABLES' approach as StorySumm ran it: every atomic claim asked about against
  the source, the summary faithful when every claim is supported (``claims.py``); the claims
  the data gives (``extras["claims"]``) or the judge's own.

Values (the runner prefixes the metric's label, e.g. ``faithfulness/faithful``):
``faithful`` (1.0 faithful, 0.0 not, NaN undecided) for every method, and for ``claims``
also ``supported`` (share of the decided claims supported), ``claims`` and
``undecided_claims``; the judge's accounting (``judge_calls``, tokens) too. A summary with
no source is NaN with the note "no source". ``binary`` and ``cot`` show the judge the whole
story, so a source longer than the judge's window is NaN with a note naming ``claims``,
which retrieves passages per claim instead (``retrieval.py``).

The judge's answers go to the artifact ``claims.json`` (``{doc_id: [{"index", "claim",
"supported", "answer", "passages"}]}``, method claims) or ``answers.json``
(``{doc_id: {"faithful", "answer", "reasoning"?}}``, binary and cot), and to the document's
trace as verdicts (``verdicts.py``).

The package also holds ``metrics=given`` (``given.py``, a plugin of its own): a faithfulness
rater's outputs made elsewhere (StorySumm's ``predicted_labels``, a JSONL or CSV of values),
entered as a judged run so the meta-evaluation compares it with this metric's raters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from metrics.faithfulness.claims import (
    EXTRACT_ATTEMPTS,
    EXTRACT_TOKENS,
    ClaimJudge,
    claims_of,
    extraction_prompt,
    notes_of,
    values_of,
)
from metrics.faithfulness.estimate import estimate as estimate  # estimate=true counts it
from metrics.faithfulness.human import HUMAN_FILES as HUMAN_FILES  # people's labels (runner.api)
from metrics.faithfulness.label import Label, LabelJudge
from metrics.faithfulness.meta import meta_tables as meta_tables  # report meta=true's tables
from metrics.faithfulness.prompts import Prompts, load
from metrics.faithfulness.retrieval import check_retrieval, prepare
from metrics.faithfulness.tasks import HUMAN_TASKS as HUMAN_TASKS  # Label Studio task kinds
from metrics.faithfulness.verdicts import ANSWERS, ARTIFACT, on_trace
from runner.api import (
    LLM,
    ConfigError,
    Document,
    Metric,
    MetricError,
    MetricResult,
    ScoreInput,
    Value,
    Verdict,
)
from runner.api.asking import Asker, check_int, judge_temperature, source_budget
from runner.api.judging import Usage

PROMPT_ROOT = Path(__file__).parent / "prompts"
"""``metrics/faithfulness/prompts/``: the package keeps its prompts beside it."""
PROMPT_DIRS = ("faithfulness",)
"""Its folder under ``PROMPT_ROOT``: every method's prompts, logged and fingerprinted."""
ROLES = ("judge",)
METHODS = ("binary", "cot", "claims")
VALUES = {
    "faithful": Value(title="Faithful (share)", range=(0, 1), better="higher", kind="label"),
    "supported": Value(title="Claims supported (share)", range=(0, 1), better="higher"),
    "claims": Value(title="Claims", kind="count"),
    "undecided_claims": Value(title="Undecided claims", kind="count", better="lower"),
}
"""``faithful`` is a summary's label (1 faithful, 0 not): its mean over summaries is the share
faithful; ``supported`` is the share of a summary's decided claims the judge supported."""
KEY = "metrics.faithfulness"
NO_SOURCE = "faithfulness: no source to judge the summary against"


class Faithfulness(Metric):
    """One rater (method, prompts, judge, settings) bound once per job."""

    def __init__(self, method: str, judge: LLM, prompts: Prompts, settings: dict[str, Any]):
        """Bind the job's judge and checked settings (``setup`` builds it)."""
        self.method, self.judge, self.prompts = method, judge, prompts
        self.max_tokens: int = settings["max_tokens"]
        self.reasoning_tokens: int = settings["reasoning_tokens"]
        self.temperature: float | None = settings["temperature"]
        self.chunk_tokens: int = settings["chunk_tokens"]
        self.budget: int = settings["budget"]
        self.headline = ("faithful", "supported") if method == "claims" else ("faithful",)
        self.extraction = extraction_prompt() if method == "claims" else None

    def reduce(self, per_document: Mapping[str, MetricResult]) -> dict[str, float]:
        """The mean of each value; a job none of whose summaries has its source is refused.

        Every value would be NaN: a FINISHED run saying nothing (``data=fables`` without
        ``data.books``). Some summaries without their source are NaN with the note, and
        ``warnings`` names them.
        """
        sourceless = [doc for doc, r in per_document.items() if NO_SOURCE in r.notes]
        if per_document and len(sourceless) == len(per_document):
            raise MetricError(
                f"metrics=faithfulness: none of the {len(per_document)} summaries has its "
                "source, so none can be judged; give the sources: data.sources=DIR (the "
                "documents as <id>.txt) with data=summaries, data.books=DIR (the books as "
                "<title>.txt) with data=fables"
            )
        return super().reduce(per_document)

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """Summaries left unjudged for want of their source."""
        sourceless = [doc for doc, r in per_document.items() if NO_SOURCE in r.notes]
        if not sourceless:
            return []
        shown = ", ".join(sourceless[:3]) + (", ..." if len(sourceless) > 3 else "")
        return [
            f"faithfulness: {len(sourceless)} of {len(per_document)} summaries have no source "
            f"({shown}): NaN, left out of the means"
        ]

    def verdicts(self, result: MetricResult) -> list[Verdict]:
        """The judge's verdicts for the document's trace: per claim, and the summary's."""
        return on_trace(result)

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """The summary's label (its claims extracted, for ``method=claims``)."""
        doc_id = document.doc_id if document is not None else ""
        return self.score_input(ScoreInput(document, summary, doc_id))

    def score_input(self, item: ScoreInput) -> MetricResult:
        """The summary's label (and its claims' answers) against the document's text.

        With ``method=claims`` the data's given claims (``item.extras["claims"]``) are judged
        instead of extracted ones.
        """
        document, summary, extras = item.document, item.summary, item.extras
        usage = Usage()
        if document is None or not document.text.strip():
            return self._undecided(NO_SOURCE, usage)
        story = document.text.strip()
        if self.method == "claims":
            return self._claims(story, summary, dict(extras), usage)
        tokens = self.judge.count_tokens(story) + self.judge.count_tokens(summary)
        if tokens > self.budget:
            return self._undecided(
                f"faithfulness: the source and summary ({tokens} tokens) do not fit "
                f"judge={self.judge.name}'s window for method={self.method}; "
                "method=claims judges passages retrieved per claim",
                usage,
            )
        rater = LabelJudge(
            self.judge, self.prompts, self.max_tokens, self.reasoning_tokens, self.temperature
        )
        label = (rater.binary if self.method == "binary" else rater.cot)(story, summary, usage)
        return _label_result(label, usage)

    def _claims(
        self, story: str, summary: str, extras: dict[str, Any], usage: Usage
    ) -> MetricResult:
        asker = Asker(self.judge, EXTRACT_ATTEMPTS, EXTRACT_TOKENS, self.temperature)
        assert self.extraction is not None  # set for method=claims
        claims = claims_of(summary, extras, asker, self.extraction, usage)
        if not claims.texts:
            why = claims.notes or ("faithfulness: no claims to judge",)
            return self._undecided(why[0], usage)
        tokens = self.judge.count_tokens(story)
        source = prepare(story, tokens, self.budget, self.chunk_tokens)
        rater = ClaimJudge(self.judge, self.prompts, source, self.max_tokens, self.temperature)
        rows = rater.ask_all(claims.texts, usage)
        notes = claims.notes + notes_of(rows)
        if not source.whole:
            notes += (
                f"faithfulness: the source ({tokens} tokens) exceeds the judge's room "
                f"({self.budget}); each claim was judged against BM25 passages (claims.json)",
            )
        values = {**values_of(rows), **usage.values()}
        return MetricResult(values=values, artifacts={ARTIFACT: rows}, notes=notes)

    def _undecided(self, note: str, usage: Usage) -> MetricResult:
        values = dict.fromkeys(self.headline, math.nan)
        if self.method == "claims":
            values.update(claims=0.0, undecided_claims=0.0)
        return MetricResult(values={**values, **usage.values()}, notes=(note,))


def _label_result(label: Label, usage: Usage) -> MetricResult:
    summary_row = {"faithful": label.faithful, "answer": label.answer}
    if label.reasoning:
        summary_row["reasoning"] = label.reasoning
    return MetricResult(
        values={"faithful": label.faithful, **usage.values()},
        artifacts={ANSWERS: summary_row},
        notes=label.notes,
    )


def setup(
    judge: LLM,
    *,
    method: str = "binary",
    prompt_dir: str | None = None,
    retrieval: str = "bm25",
    chunk_tokens: int = 512,
    room_tokens: int = 256,
    max_tokens: int = 50,
    reasoning_tokens: int = 350,
    temperature: float | None = None,
) -> Faithfulness:
    """The metric for a job (parameters as in ``conf/metrics/faithfulness.yaml``)."""
    if method not in METHODS:
        raise ConfigError(f"{KEY}.method={method} is not a method; use one of {', '.join(METHODS)}")
    check_retrieval(retrieval)
    for name, value, low in (
        ("chunk_tokens", chunk_tokens, 16),
        ("room_tokens", room_tokens, 0),
        ("max_tokens", max_tokens, 1),
        ("reasoning_tokens", reasoning_tokens, 1),
    ):
        check_int(f"{KEY}.{name}", value, low)
    prompts = load(method, prompt_dir)
    answers = max_tokens + (reasoning_tokens if method == "cot" else 0)  # cot: its reasoning
    budget = source_budget(judge, prompts, answers, room_tokens, KEY)
    settings = {
        "max_tokens": max_tokens,
        "reasoning_tokens": reasoning_tokens,
        "temperature": judge_temperature(KEY, temperature),
        "chunk_tokens": chunk_tokens,
        "budget": budget,
    }
    return Faithfulness(method, judge, prompts, settings)
