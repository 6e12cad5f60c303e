"""Asking the judge about sentences: one per call (the paper) or k per call (batched).

Bounded re-asks: an unreadable per-sentence answer is followed by a short request to fix
its form (same prefix, so the prefix cache still applies); in batched mode only the
missing, mismatched or unreadable sentences are asked again, in a smaller batch. Each
re-ask passes ``sample=attempt`` so the gateway's response cache gives it its own slot
instead of replaying the answer that failed.

Calls go one after another for an in-process judge (``concurrency == 1``), so llama.cpp
keeps the shared prefix in its KV cache; remote judges get a thread pool of
``judge.concurrency`` workers, after one first call that lets the provider cache the
prefix before the others arrive.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from metrics.booookscore.parse import Verdict, parse_answer, parse_batch_answer, unparsed
from metrics.booookscore.prompt import Template, numbered, reask_messages
from runner.api import LLM, AuthError, LLMError
from runner.api.judging import Usage, run_units

PURPOSE = "booookscore"
STOP = ("\n[", "\n---")
"""Where the paper's format ends; small models otherwise go on inventing examples."""


@dataclass(frozen=True)
class Ask:
    """What every call about one summary shares."""

    judge: LLM
    template: Template
    summary: str
    max_attempts: int
    max_tokens: int


def judge_sentence(ask: Ask, sentence: str) -> tuple[dict[str, Verdict], Usage]:
    """One sentence per call, the paper's mode; re-asked until readable or out of attempts."""
    usage = Usage()
    base = ask.template.messages(ask.summary, sentence)
    messages = base
    verdict = unparsed("not asked")
    for attempt in range(ask.max_attempts):
        try:
            completion = ask.judge.complete(
                messages, max_tokens=ask.max_tokens, stop=STOP, sample=attempt, purpose=PURPOSE
            )
        except AuthError:
            raise  # a rejected key fails every call: stop the run, do not NaN it away
        except LLMError as err:
            return {sentence: unparsed(f"judge call failed: {err}", verdict.answer)}, usage
        usage.add(completion, reask=attempt > 0)
        verdict = parse_answer(completion.text)
        if verdict.parsed:
            break
        messages = reask_messages(base, completion.text, verdict.error)
    return {sentence: verdict}, usage


def judge_batch(ask: Ask, sentences: list[str]) -> tuple[dict[str, Verdict], Usage]:
    """K numbered sentences per call; the ones not answered well are asked again."""
    usage = Usage()
    verdicts: dict[str, Verdict] = {}
    pending = list(sentences)
    for attempt in range(ask.max_attempts):
        if not pending:
            break
        messages = ask.template.messages(ask.summary, numbered(pending))
        try:
            completion = ask.judge.complete(
                messages, max_tokens=ask.max_tokens * len(pending), sample=attempt, purpose=PURPOSE
            )
        except AuthError:
            raise
        except LLMError as err:
            verdicts.update({s: unparsed(f"judge call failed: {err}") for s in pending})
            return verdicts, usage
        usage.add(completion, reask=attempt > 0)
        found, error = parse_batch_answer(completion.text, pending)
        missing = error or "sentence missing or mismatched in the JSON answer"
        for index, sentence in enumerate(pending):
            verdicts[sentence] = found.get(index) or unparsed(missing, completion.text)
        pending = [s for s in pending if not verdicts[s].parsed]
    return verdicts, usage


def judge_all(ask: Ask, sentences: list[str], batch_size: int) -> tuple[dict[str, Verdict], Usage]:
    """Verdicts for every sentence, asked one at a time or ``batch_size`` at a time."""
    units: list[Callable[[], tuple[dict[str, Verdict], Usage]]]
    if batch_size <= 1:
        units = [functools.partial(judge_sentence, ask, s) for s in sentences]
    else:
        groups = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
        units = [functools.partial(judge_batch, ask, g) for g in groups]
    verdicts: dict[str, Verdict] = {}
    usage = Usage()
    for found, spent in run_units(units, ask.judge):
        verdicts.update(found)
        usage.merge(spent)
    return verdicts, usage
