"""The claims rater (FABLES' approach, as StorySumm's ``evaluators/fables.py`` runs it).

Each atomic claim of the summary is asked about on its own: "is the above statement True or
False?" against the source (or the passages retrieved for it, ``retrieval.py``); ``True``
is supported. The claims are the ones the data gives (``extras["claims"]``: StorySumm's and FABLES'
released claims) or, when it gives none, those the judge extracts with the alignment
metric's claim prompt (``metrics.CLAIMS_PROMPT``) and parser (``runner.api.claims``, up to
``EXTRACT_ATTEMPTS`` asks); an extracted claim whose words are not in the summary (a small
judge copying the prompt's example) is left out with a note.

A summary's values:

- ``supported``: claims answered True / claims answered True or False (NaN when none was);
- ``faithful``: 0 as soon as one claim is answered False, 1 when every claim is answered
  True, NaN when no claim is False but some answer was unreadable (it could go either way:
  the release would have counted it False, which is a guess about the judge, not the
  summary) or when there is no claim;
- ``claims``: how many claims were asked about, ``undecided_claims`` how many answers said
  neither True nor False.

Claims are asked concurrently (``runner.api.thread_map``, up to the judge's concurrency);
every request starts with the same instruction and source, so a prefix cache reuses it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from metrics import CLAIMS_PROMPT
from metrics.faithfulness.answers import true_false
from metrics.faithfulness.prompts import Prompts
from metrics.faithfulness.retrieval import Source
from runner.api import LLM, thread_map
from runner.api.asking import Asker, Prompt, load_prompt
from runner.api.claims import check_claims, grounded
from runner.api.judging import Usage

CLAIM_PURPOSE = "faithfulness.claim"
EXTRACT_PURPOSE = "faithfulness.claims_extract"
EXTRACT_TOKENS = 1024
"""Cap on the claim-extraction answer (a list of claims is the longest answer)."""
EXTRACT_ATTEMPTS = 3
"""Asks for a readable claim list before the summary is left undecided (as alignment's)."""


def extraction_prompt() -> Prompt:
    """The alignment metric's claim-extraction prompt (slot ``{summary}``)."""
    return load_prompt(None, CLAIMS_PROMPT, "metrics.faithfulness claims prompt", ("summary",))


@dataclass(frozen=True)
class Claims:
    """The claims of one summary and what is to be said about where they came from."""

    texts: list[str]
    given: bool
    notes: tuple[str, ...] = ()


def claims_of(
    summary: str, extras: Mapping[str, Any], asker: Asker, prompt: Prompt, usage: Usage
) -> Claims:
    """The data's claims when it gives them, else the judge's (grounded in the summary)."""
    if "claims" in extras:
        return Claims([str(c) for c in extras["claims"]], True)
    answer = asker.ask(prompt.messages(summary=summary), check_claims, usage, EXTRACT_PURPOSE)
    if not answer.parsed:
        note = (
            f"faithfulness: claims unreadable after {asker.max_attempts} attempts: {answer.error}"
        )
        return Claims([], False, (note,))
    found = list(dict.fromkeys(answer.value))
    kept = [c for c in found if grounded(c, summary)]
    notes: tuple[str, ...] = ()
    if len(kept) < len(found):
        notes = (
            f"faithfulness: {len(found) - len(kept)} extracted claims are not in the summary; "
            "left out",
        )
    return Claims(kept, False, notes)


@dataclass(frozen=True)
class ClaimJudge:
    """One judge asking about one summary's claims against one source."""

    judge: LLM
    prompts: Prompts
    source: Source
    max_tokens: int
    temperature: float | None

    def ask(self, item: tuple[int, str]) -> tuple[dict[str, Any], Any]:
        """One claim's row for ``claims.json`` and the call's completion."""
        index, claim = item
        text, passages = self.source.for_claim(claim)
        completion = self.judge.complete(
            self.prompts.claim(text, claim),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            purpose=CLAIM_PURPOSE,
        )
        row = {
            "index": index,
            "claim": claim,
            "supported": true_false(completion.text),
            "answer": completion.text,
            "passages": passages,
        }
        return row, completion

    def ask_all(self, claims: Sequence[str], usage: Usage) -> list[dict[str, Any]]:
        """Every claim's row, in order, asked concurrently up to the judge's concurrency."""
        done = thread_map(self.ask, list(enumerate(claims)), self.judge.concurrency)
        for _, completion in done:
            usage.add(completion, reask=False)
        return [row for row, _ in done]


def values_of(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``faithful``, ``supported``, ``claims`` and ``undecided_claims`` of one summary."""
    answers = [r["supported"] for r in rows]
    decided = [a for a in answers if a is not None]
    if False in decided:
        faithful = 0.0
    elif decided and len(decided) == len(answers):
        faithful = 1.0
    else:
        faithful = math.nan
    return {
        "faithful": faithful,
        "supported": sum(decided) / len(decided) if decided else math.nan,
        "claims": float(len(rows)),
        "undecided_claims": float(len(answers) - len(decided)),
    }


def notes_of(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """A note listing the claims whose answer said neither True nor False."""
    bad = [r for r in rows if r["supported"] is None]
    if not bad:
        return ()
    shown = "; ".join(f"{r['claim'][:50]!r}: {str(r['answer'])[:40]!r}" for r in bad[:3])
    return (
        f"faithfulness: {len(bad)} of {len(rows)} claims answered neither True nor False "
        f"(undecided, see claims.json): {shown}",
    )
