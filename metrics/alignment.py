"""Alignment (precision, faithfulness) as the seed-003 article fixes DeepEval's.

DeepEval judged a summary's claims against "truths" an LLM had extracted from the source:
a detail missing from that list read as unfaithful, scores varied run to run, and a
summary equal to its source scored below 1 (DeepEval issue #565). The article's fix, kept
here: judge every claim against the SOURCE ITSELF.

1. One call extracts the summary's claims (``prompts/alignment/claims.txt``, JSON list).
2. Each distinct claim is judged yes / no / idk (``verdict.txt``): the instructions and the
   source first (one prefix shared by all claims, marked for caching), the claim last.
   A source too long for one call (``judge.context_window`` minus the prompt, ``max_tokens``
   and ``room_tokens``) is cut with ``runner.api.chunking`` into chunks of at most
   ``chunk_tokens`` and each claim sees the chunks Okapi BM25 ranks best for it that fit
   (``runner.api.retrieval``); their indices, best first, are the claim's ``evidence_chunks``
   (null when the whole source was shown).
3. ``alignment = yes / judged claims``; a "no" and an "idk" both count against it, as in
   DeepEval. Claims still unreadable after ``max_attempts`` are counted in
   ``unparsed_claims`` and left out of numerator and denominator.

Claim verdicts run concurrently up to ``judge.concurrency`` (``judging.run_units``).
Artifact ``alignment.json``: per claim ``{claim, verdict, reason, evidence_chunks}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

from metrics import CLAIMS_PROMPT, PROMPT_ROOT
from runner.api import (
    LLM,
    Chunk,
    Document,
    Metric,
    MetricResult,
    Value,
    split_into_chunks,
)
from runner.api.asking import (
    Asker,
    Prompt,
    as_text,
    check_int,
    judge_settings,
    load_prompt,
    nan_result_values,
    source_budget,
)
from runner.api.claims import check_claims, grounded
from runner.api.judging import Usage, key_of, run_units
from runner.api.retrieval import BM25, excerpt, pick_chunks

ROLES = ("judge",)
PROMPT_DIRS = ("alignment",)
VALUES = {"alignment": Value(title="Alignment", range=(0, 1), better="higher")}
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
ARTIFACT = "alignment.json"
VERDICT_PROMPT = PROMPT_ROOT / "alignment" / "verdict.txt"
VERDICT_SLOTS = ("source", "claim")
VERDICTS = {"yes": "yes", "no": "no", "idk": "idk", "i don't know": "idk", "unknown": "idk"}


@dataclass(frozen=True)
class Evidence:
    """The source as the judge sees it: whole, or BM25-picked chunks per claim."""

    text: str
    chunks: list[Chunk] | None
    index: BM25 | None
    budget: int

    def for_claim(self, claim: str) -> tuple[str, list[int] | None]:
        """The text shown with ``claim`` and the chunk indices it came from (None = whole)."""
        if self.chunks is None or self.index is None:
            return self.text, None
        chosen = pick_chunks(self.chunks, self.index.rank(claim), self.budget)
        return excerpt(self.chunks, chosen), chosen


class Alignment(Metric):
    """Claims of a summary judged against its source; bound to one judge per job."""

    headline = ("alignment",)

    def __init__(
        self, asker: Asker, claims: Prompt, verdict: Prompt, budget: int, chunk_tokens: int
    ):
        """Bind the job's judge, prompts and token budgets once (``setup`` builds it)."""
        self.asker, self.claims_prompt, self.verdict_prompt = asker, claims, verdict
        self.budget, self.chunk_tokens = budget, chunk_tokens

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Alignment of ``summary`` with ``document``'s text (NaN with a note when undecidable)."""
        usage = Usage()
        if document is None or not document.text.strip():
            return _undecided("alignment: no source text to judge the claims against", usage)
        if not summary.strip():
            return _undecided("alignment: the summary is empty", usage)
        answer = self.asker.ask(
            self.claims_prompt.messages(summary=summary), check_claims, usage, "alignment.claims"
        )
        if not answer.parsed:
            return _undecided(
                f"alignment: claims unreadable after {self.asker.max_attempts} attempts: "
                f"{answer.error}",
                usage,
            )
        claims = list(dict.fromkeys(answer.value))
        invented = [c for c in claims if not grounded(c, summary)]
        claims = [c for c in claims if c not in invented]
        if not claims:
            reason = (
                (
                    f"the judge's {len(invented)} claims are not in the summary (a small judge "
                    "may copy the prompt's example)"
                )
                if invented
                else "the judge found no claims in the summary"
            )
            return _undecided(f"alignment: {reason}", usage, invented)
        rows = self.judge_claims(claims, self.evidence(document.text), usage)
        rows += [
            {"claim": c, "verdict": "not in summary", "reason": None, "evidence_chunks": None}
            for c in invented
        ]
        notes = _notes(rows, self.asker.max_attempts)
        if invented:
            notes += (
                f"alignment: {len(invented)} extracted claims are not in the summary; left out",
            )
        return MetricResult(values=aggregate(rows, usage), artifacts={ARTIFACT: rows}, notes=notes)

    def evidence(self, source: str) -> Evidence:
        """The whole source when it fits one call, else its chunks indexed for BM25."""
        if self.asker.judge.count_tokens(source) <= self.budget:
            return Evidence(source, None, None, self.budget)
        chunks = split_into_chunks(source, min(self.chunk_tokens, self.budget))
        return Evidence(source, chunks, BM25([c.text for c in chunks]), self.budget)

    def judge_claims(
        self, claims: list[str], evidence: Evidence, usage: Usage
    ) -> list[dict[str, Any]]:
        """One verdict per claim, concurrently; each unit keeps its own usage, merged after."""
        usages = [Usage() for _ in claims]
        units = [
            partial(self.judge_claim, c, evidence, u) for c, u in zip(claims, usages, strict=True)
        ]
        rows = run_units(units, self.asker.judge)
        for unit_usage in usages:
            usage.merge(unit_usage)
        return rows

    def judge_claim(self, claim: str, evidence: Evidence, usage: Usage) -> dict[str, Any]:
        """One claim's artifact row: verdict, reason, evidence.

        The verdict is 'yes', 'no' or 'idk', None when the answer was not parsed.
        """
        text, chunks = evidence.for_claim(claim)
        messages = self.verdict_prompt.messages(source=text, claim=claim)
        answer = self.asker.ask(messages, check_verdict, usage, "alignment.verdict")
        row: dict[str, Any] = {
            "claim": claim,
            "verdict": None,
            "reason": "",
            "evidence_chunks": chunks,
        }
        if answer.parsed:
            row["verdict"], row["reason"] = answer.value
        else:
            row.update(unparsed=True, error=answer.error, answer=answer.raw)
        return row


def check_verdict(data: Any) -> tuple[Any, str]:
    """(verdict, reason) with verdict one of yes / no / idk."""
    raw = as_text(key_of(data, "verdict")).lower().strip(" .!'\"")
    if raw not in VERDICTS:
        return None, "'verdict' must be 'yes', 'no' or 'idk'"
    return (VERDICTS[raw], as_text(key_of(data, "reason"))), ""


def aggregate(rows: list[dict[str, Any]], usage: Usage) -> dict[str, float]:
    """The score, the verdict counts and the judge accounting of one summary."""
    invented = sum(1 for r in rows if r["verdict"] == "not in summary")
    rows = [r for r in rows if r["verdict"] != "not in summary"]
    verdicts = [r["verdict"] for r in rows]
    judged = sum(1 for v in verdicts if v is not None)
    supported = verdicts.count("yes")
    return {
        "alignment": supported / judged if judged else math.nan,
        "claims": float(len(rows)),
        "supported": float(supported),
        "contradicted": float(verdicts.count("no")),
        "unknown": float(verdicts.count("idk")),
        "unparsed_claims": float(len(rows) - judged),
        "invented_claims": float(invented),
        **usage.values(),
    }


def _notes(rows: list[dict[str, Any]], max_attempts: int) -> tuple[str, ...]:
    bad = [r for r in rows if r["verdict"] is None]
    if not bad:
        return ()
    shown = "; ".join(f"{r['claim'][:60]!r}: {r['error']}" for r in bad[:5])
    note = (
        f"alignment: {len(bad)} of {len(rows)} claims unparsed after {max_attempts} attempts, "
        f"left out of the score (see {ARTIFACT}): {shown}"
    )
    return (note,)


def _undecided(note: str, usage: Usage, invented: list[str] | None = None) -> MetricResult:
    values = nan_result_values(("alignment",), usage)
    values.update(claims=0.0, unparsed_claims=0.0, invented_claims=float(len(invented or ())))
    rows = [
        {"claim": c, "verdict": "not in summary", "reason": None, "evidence_chunks": None}
        for c in invented or ()
    ]
    return MetricResult(values=values, notes=(note,), artifacts={ARTIFACT: rows} if rows else {})


def build(
    judge: LLM,
    key: str,
    *,
    claims_prompt_path: str | None,
    verdict_prompt_path: str | None,
    chunk_tokens: int,
    room_tokens: int,
    max_attempts: int,
    max_tokens: int,
    temperature: float | None,
) -> Alignment:
    """The metric with its parameters checked under config key ``key`` (f1 builds one too)."""
    asker = judge_settings(key, judge, max_attempts, max_tokens, temperature, room_tokens)
    check_int(f"{key}.chunk_tokens", chunk_tokens, 16)
    claims = load_prompt(
        claims_prompt_path, CLAIMS_PROMPT, f"{key}.claims_prompt_path", ("summary",)
    )
    verdict = load_prompt(
        verdict_prompt_path,
        VERDICT_PROMPT,
        f"{key}.verdict_prompt_path",
        VERDICT_SLOTS,
        ("source",),
    )
    budget = source_budget(judge, verdict, max_tokens, room_tokens, key)
    return Alignment(asker, claims, verdict, budget, chunk_tokens)


def setup(
    judge: LLM,
    *,
    claims_prompt_path: str | None = None,
    verdict_prompt_path: str | None = None,
    chunk_tokens: int = 512,
    room_tokens: int = 256,
    max_attempts: int = 3,
    max_tokens: int = 1024,
    temperature: float | None = None,
) -> Alignment:
    """The metric for a job (parameters as in ``conf/metrics/alignment.yaml``)."""
    return build(
        judge,
        "metrics.alignment",
        claims_prompt_path=claims_prompt_path,
        verdict_prompt_path=verdict_prompt_path,
        chunk_tokens=chunk_tokens,
        room_tokens=room_tokens,
        max_attempts=max_attempts,
        max_tokens=max_tokens,
        temperature=temperature,
    )
