"""The SummIt loop for one document: evaluate, maybe stop, refine; every round traced."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from runner.api import LLM, Completion, TraceStep, word_opcodes
from strategies.summit.feedback import OPERATIONS, Feedback, parse_feedback
from strategies.summit.prompts import Prompts

STOP_REASONS = (
    "stop_token",
    "keep",
    "no_operations",
    "unparsed",
    "max_iterations",
    "unchanged",
    "patience",
)


@dataclass
class Loop:
    """What every call about one document shares."""

    model: LLM
    evaluator: LLM
    prompts: Prompts
    source: str
    temperature: float | None
    max_tokens: int
    eval_max_tokens: int
    max_reasks: int
    summarizer_extra: str = ""
    evaluator_extra: str = ""


@dataclass
class Outcome:
    """The loop's result for one document."""

    summary: str
    scores: list[float]
    steps: list[TraceStep]
    calls: list[Completion]
    counters: dict[str, float] = field(default_factory=dict)


def run_loop(
    loop: Loop, first: str | None, max_iterations: int, patience: int, final: str
) -> Outcome:
    """Draft (unless given), then rounds of evaluate -> refine until a rule stops it."""
    calls: list[Completion] = []
    steps: list[TraceStep] = []
    if first is None:
        done = loop.model.complete(
            loop.prompts.summarizer_messages(loop.source, loop.summarizer_extra),
            max_tokens=loop.max_tokens,
            temperature=loop.temperature,
            purpose="summit/draft",
        )
        calls.append(done)
        first = done.text.strip()
        steps.append(
            TraceStep("draft", done.call_id, {"text": first, "tokens": done.completion_tokens})
        )
    summaries: list[str] = [first]
    scores: list[float] = []
    feedbacks: list[Feedback] = []
    reason: str | None = None
    reasks = 0
    for index in range(max_iterations):
        feedback, answer, asked = _evaluate(loop, summaries[-1])
        calls += asked
        reasks += len(asked) - 1
        feedbacks.append(feedback)
        scores.append(feedback.score if feedback.score is not None else math.nan)
        reason = _stop_reason(feedback, scores, patience, index + 1 == max_iterations)
        revised: str | None = None
        if reason is None:
            revised, call = _refine(loop, summaries[-1], feedback)
            calls.append(call)
            if _same(revised, summaries[-1]):
                reason = "unchanged"
        steps.append(_round_step(index, summaries, feedback, answer, asked, revised, reason))
        if reason is not None:
            break
        summaries.append(revised or "")  # reason is None here, so a revision was made
    reason = reason or "max_iterations"  # the last round always names a reason
    chosen = _choose(summaries, scores, final)
    steps.append(
        TraceStep("stop", "", {"reason": reason, "final": final, "chosen_iteration": chosen + 1})
    )
    refined = sum(1 for step in steps if step.detail.get("revised") is not None)
    counters = _counters(feedbacks, scores, reason, reasks, chosen, refined)
    return Outcome(summaries[chosen], scores, steps, calls, counters)


def _evaluate(loop: Loop, summary: str) -> tuple[Feedback, str, list[Completion]]:
    """Ask, and ask again (a new sample each time) while the answer is unreadable."""
    messages = loop.prompts.evaluator_messages(loop.source, summary, loop.evaluator_extra)
    asked: list[Completion] = []
    for attempt in range(loop.max_reasks + 1):
        done = loop.evaluator.complete(
            messages,
            max_tokens=loop.eval_max_tokens,
            temperature=loop.temperature,
            sample=attempt,
            purpose="summit/evaluate",
        )
        asked.append(done)
        feedback = parse_feedback(done.text, loop.prompts.operations)
        if feedback.parsed:
            break
    return feedback, done.text, asked


def _stop_reason(feedback: Feedback, scores: list[float], patience: int, last: bool) -> str | None:
    if not feedback.parsed:
        return "unparsed"
    if feedback.stop:
        return "stop_token"
    if feedback.keep_only:
        return "keep"
    if not [o for o in feedback.operations if o.kind != "keep"]:
        return "no_operations"
    if patience and _stalled(scores, patience):
        return "patience"
    return "max_iterations" if last else None


def _stalled(scores: list[float], patience: int) -> bool:
    """No score in the last ``patience`` rounds beat the best before them."""
    if len(scores) <= patience:
        return False
    before = [s for s in scores[:-patience] if not math.isnan(s)]
    recent = [s for s in scores[-patience:] if not math.isnan(s)]
    return bool(before) and (not recent or max(recent) <= max(before))


def _refine(loop: Loop, summary: str, feedback: Feedback) -> tuple[str, Completion]:
    operations = tuple(o for o in feedback.operations if o.kind != "keep")
    messages = loop.prompts.refine_messages(
        loop.source, loop.summarizer_extra, summary, operations, feedback.justification
    )
    done = loop.model.complete(
        messages, max_tokens=loop.max_tokens, temperature=loop.temperature, purpose="summit/refine"
    )
    return done.text.strip(), done


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def word_diff(before: str, after: str) -> list[dict[str, str]]:
    """The word-level edits from ``before`` to ``after`` (difflib opcodes, equal runs left out)."""
    return [
        {"op": op, "old": old, "new": new}
        for op, old, new in word_opcodes(before, after)
        if op != "equal"
    ]


def _round_step(
    index: int,
    summaries: list[str],
    feedback: Feedback,
    answer: str,
    asked: list[Completion],
    revised: str | None,
    reason: str | None,
) -> TraceStep:
    detail: dict[str, Any] = {
        "iteration": index + 1,
        "summary": summaries[-1],
        "evaluation": answer,
        "score": feedback.score,
        "distribution": feedback.distribution,
        "justification": feedback.justification,
        "operations": [{"kind": o.kind, "target": o.target} for o in feedback.operations],
        "dropped_operations": [{"kind": o.kind, "target": o.target} for o in feedback.dropped],
        "stop_token": feedback.stop,
        "evaluator_calls": [c.call_id for c in asked],
        "evaluator_tokens": sum(c.prompt_tokens + c.completion_tokens for c in asked),
        "cost_usd": sum(c.cost_usd for c in asked),
        "diff_from_previous": word_diff(summaries[-2], summaries[-1]) if len(summaries) > 1 else [],
        "revised": revised,
        "stop_reason": reason,
    }
    return TraceStep("iteration", asked[-1].call_id, detail)


def _choose(summaries: list[str], scores: list[float], final: str) -> int:
    if final == "last":
        return len(summaries) - 1
    scored = [(s, -i) for i, s in enumerate(scores[: len(summaries)]) if not math.isnan(s)]
    return -max(scored)[1] if scored else len(summaries) - 1


def _counters(
    feedbacks: list[Feedback],
    scores: list[float],
    reason: str,
    reasks: int,
    chosen: int,
    refined: int,
) -> dict[str, float]:
    counters = {f"stop/{r}": float(r == reason) for r in STOP_REASONS}
    for kind in OPERATIONS:
        counters[f"ops/{kind}"] = float(
            sum(o.kind == kind for f in feedbacks for o in f.operations)
        )
    finite = [s for s in scores if not math.isnan(s)]
    counters.update(
        iterations=float(len(feedbacks)),
        refinements=float(refined),
        ops_dropped=float(sum(len(f.dropped) for f in feedbacks)),
        reasks=float(reasks),
        unparsed=float(sum(not f.parsed for f in feedbacks)),
        first_score=finite[0] if finite else math.nan,
        final_score=scores[chosen] if chosen < len(scores) else math.nan,
        best_score=max(finite) if finite else math.nan,
        chosen_iteration=float(chosen + 1),
    )
    return counters
