"""SummIt: iterative refinement with self-evaluation and edit operations (Zhang et al. 2023).

The seed paper (section 3, Appendix A-B) is the specification; its authors released no
code. Two roles: the summarizer is the run's ``model``, the evaluator the ``evaluator``
role (by default the same model, a separate instance with its own prompts).

Per document: a draft, then up to ``max_iterations`` rounds of evaluate -> refine. Round i
evaluates summary y_i (score, justification, suggestions among the allowed operations,
maybe ``<STOP>``; ``summit_feedback``) and, unless it stops, the summarizer revises it with
the Refine turn (``summit_prompts``). It stops on ``<STOP>``, on Keep-only feedback, on
feedback with no allowed operation, when the evaluator's answer stays unreadable after
``max_reasks`` re-asks, at ``max_iterations`` evaluations, when a revision returns the
summary unchanged, or after ``patience`` rounds without a better score (0 = off).
``final=last`` returns the last summary (the paper); ``final=best`` the best-scored one
(earliest on ties), to measure the over-correction the paper's human study found.
(``return`` is a Python keyword, hence ``final``.)

Choices where the paper is silent, each a parameter:
- Long documents: a document whose Summarize and Evaluate prompts fit the roles' windows
  is summarized directly. A longer one gets its draft from a base strategy
  (``draft=hier|incremental|baseline``, or any strategy the registry finds: a researcher's
  ``lead.py`` in the study folder, ``PLUGIN_PARAMS``), and both roles see the source through that
  strategy's level-0 chunk summaries (hier), or else the document cut to what fits; the
  cut is counted (``source_truncated_tokens``). ``draft_for=all`` drafts every document
  with the base strategy (short ones then keep their full text as the source): for a
  small model that copies the opening under SummIt's Summarize prompt.
- ``temperature`` for both roles' calls: 0, Appendix A (null = each role's own default).
- ``knowledge=true`` (the faithfulness setting): the summarizer extracts up to
  ``knowledge_max`` (subject; relation; object) triples with our prompt (OpenIE in the
  paper; no OpenIE library installs offline here), shown to both roles.
- ``topic="..."`` (the control setting): each role first extracts snippets of under five
  words about the topic, then summarizes or evaluates with the topic and its snippets.
- ``in_context=FILE``: a JSON list of document/summary/explanation objects; pairs for
  the summarizer, triplets for the evaluator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

from runner.api import (
    LLM,
    Chunk,
    Completion,
    ConfigError,
    StrategyResult,
    TraceStep,
    Value,
    count_tokens,
    decode,
    encode,
)
from runner.api.budgets import effective_window, word_limit
from runner.api.generation import tally
from strategies.prompting import PROMPT_ROOT as PROMPT_ROOT  # prompts/ beside the package
from strategies.summit.draft import draft_keywords, draft_module
from strategies.summit.estimate import estimate as estimate  # estimate=true counts its calls
from strategies.summit.feedback import OPERATIONS, Feedback, parse_feedback
from strategies.summit.loop import Loop, run_loop
from strategies.summit.prompts import Prompts, check_operations, load_examples
from strategies.summit.view import DRAFTED
from strategies.summit.view import trace_view as trace_view  # the viewer's drawing of the trace

ROLES = ("model", "evaluator")
"""The summarizer and the evaluator."""
IGNORES: dict[str, str] = {}
"""Set keys this strategy does not read, with why (a note when a run sets one): none."""
PROMPT_DIRS = ("summit", "hier", "incremental", "baseline", "common")
"""Its folders under ``strategies/prompts/``, its drafting strategies' included (``draft=``):
logged and hashed into the fingerprint, so an edited hier prompt reruns a finished cell."""
VALUES = {
    "score": Value(
        title="evaluator score", range=(1, 5), better="higher", kind="ordinal", series=True
    ),
}
"""The evaluator's score per iteration (its 1-5 scale, ``feedback.py``), logged as steps of
``strategy/score``: the report's curve per configuration."""
PLUGIN_PARAMS = {"draft": "strategy"}
"""``draft`` names the base strategy: any the registry finds, checked before the job starts
and part of the fingerprint (its identity and prompts)."""


def summarize(
    chunks: list[Chunk],
    model: LLM,
    evaluator: LLM,
    *,
    draft: str = "hier",
    draft_for: str = "long",
    max_iterations: int = 5,
    patience: int = 0,
    final: str = "last",
    operations: list[str] | tuple[str, ...] = OPERATIONS,
    max_reasks: int = 2,
    temperature: float | None = 0.0,
    max_summary_len: int = 900,
    words_per_token: float = 0.65,
    eval_max_tokens: int = 512,
    in_context: str | None = None,
    knowledge: bool = False,
    knowledge_max: int = 30,
    topic: str | None = None,
    safety_margin: float = 0.05,
) -> StrategyResult:
    """Draft, then evaluate and refine until a stopping rule fires; see the module docstring."""
    base = _check(draft, draft_for, max_iterations, patience, final, max_reasks, knowledge, topic)
    if not chunks:
        return StrategyResult("", (), {"calls": 0.0, "iterations": 0.0})
    examples = load_examples(in_context)
    setting = "knowledge" if knowledge else "topic" if topic else "quality"
    prompts = Prompts(
        setting,
        check_operations(operations),
        word_limit(max_summary_len, words_per_token),
        *examples,
    )
    text = "".join(c.text for c in chunks)
    source, draft_result, truncated, long = _source_and_draft(
        chunks,
        text,
        model,
        evaluator,
        prompts,
        base,
        draft_for,
        max_summary_len,
        words_per_token,
        eval_max_tokens,
        safety_margin,
    )
    loop = Loop(
        model=model,
        evaluator=evaluator,
        prompts=prompts,
        source=source,
        temperature=temperature,
        max_tokens=max_summary_len,
        eval_max_tokens=eval_max_tokens,
        max_reasks=max_reasks,
    )
    setup_calls, setup_steps = _extractions(loop, knowledge, knowledge_max, topic)
    first = draft_result.summary if draft_result else None
    outcome = run_loop(loop, first, max_iterations, patience, final)
    calls = [*setup_calls, *outcome.calls]
    drafted = (
        [*draft_result.trace, TraceStep(DRAFTED, "", {"strategy": draft})] if draft_result else []
    )
    trace = [*drafted, *setup_steps, *outcome.steps]
    counters = tally(calls)
    if draft_result:
        for key in ("calls", "prompt_tokens", "completion_tokens"):
            counters[key] += draft_result.counters.get(key, 0.0)
        counters["draft_calls"] = draft_result.counters.get("calls", 0.0)
    counters.update(
        outcome.counters, source_truncated_tokens=float(truncated), long_document=float(long)
    )
    return StrategyResult(outcome.summary, tuple(trace), counters, {"score": tuple(outcome.scores)})


def _check(
    draft: str,
    draft_for: str,
    max_iterations: int,
    patience: int,
    final: str,
    max_reasks: int,
    knowledge: bool,
    topic: str | None,
) -> ModuleType:
    """The settings checked before any call; returns the draft strategy's module, looked up once."""
    if draft == "summit":
        raise ConfigError("strategy.draft=summit would draft with itself; choose hier")
    base = draft_module(draft)
    if draft_for not in ("long", "all"):
        raise ConfigError(
            f"strategy.draft_for={draft_for} must be long (documents over the windows) or all"
        )
    if final not in ("last", "best"):
        raise ConfigError(f"strategy.final={final} must be last (the paper) or best")
    for key, value, low in (
        ("max_iterations", max_iterations, 1),
        ("patience", patience, 0),
        ("max_reasks", max_reasks, 0),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ConfigError(f"strategy.{key}={value} must be a whole number >= {low}")
    if knowledge and topic:
        raise ConfigError(
            "strategy.knowledge and strategy.topic are separate settings of the paper; "
            "set one of them"
        )
    return base


def _source_and_draft(
    chunks: list[Chunk],
    text: str,
    model: LLM,
    evaluator: LLM,
    prompts: Prompts,
    draft: ModuleType,
    draft_for: str,
    max_summary_len: int,
    words_per_token: float,
    eval_max_tokens: int,
    safety_margin: float,
) -> tuple[str, StrategyResult | None, int, bool]:
    """What both roles see of the source, and how it was made to fit.

    Returns (the source text shown, the base strategy's draft or None, tokens cut, whether
    the document is over the windows).
    """
    room = _source_room(model, evaluator, prompts, max_summary_len, eval_max_tokens, safety_margin)
    fits = count_tokens(text) <= room
    if fits and draft_for == "long":
        return text.strip(), None, 0, False
    values = {"max_summary_len": max_summary_len, "words_per_token": words_per_token}
    result = draft.summarize(chunks, model, **draft_keywords(draft.summarize, values))
    if fits:
        return text.strip(), result, 0, False
    level0 = [
        s.detail["text"]
        for s in result.trace
        if s.kind == "summarize" and s.detail.get("level") == 0
    ]
    view = "\n\n".join(level0) if level0 else text
    tokens = encode(view.strip())
    kept = view.strip() if len(tokens) <= room else decode(tokens[:room])
    return kept, result, max(0, len(tokens) - room), True


def _source_room(
    model: LLM,
    evaluator: LLM,
    prompts: Prompts,
    max_summary_len: int,
    eval_max_tokens: int,
    safety_margin: float,
) -> int:
    """Tokens of source that fit both the Refine conversation and the Evaluate prompt."""
    summarizer_overhead = sum(
        count_tokens(m.content) for m in prompts.refine_messages("", "", "x", (), "x")
    )
    evaluator_overhead = sum(
        count_tokens(m.content) for m in prompts.evaluator_messages("", "", "")
    )
    refine_room = effective_window(model, safety_margin) - summarizer_overhead - 2 * max_summary_len
    evaluate_room = (
        effective_window(evaluator, safety_margin)
        - evaluator_overhead
        - max_summary_len
        - eval_max_tokens
    )
    room = min(refine_room, evaluate_room) - 600  # headroom for the knowledge/topic extras
    if room <= 0:
        raise ConfigError(
            f"strategy.max_summary_len={max_summary_len} leaves no room for the source in the "
            f"windows of '{model.name}' and '{evaluator.name}'; lower it"
        )
    return room


@dataclass
class _Extracted:
    calls: list[Completion] = field(default_factory=list)
    steps: list[TraceStep] = field(default_factory=list)


def _extractions(
    loop: Loop, knowledge: bool, knowledge_max: int, topic: str | None
) -> tuple[list[Completion], list[TraceStep]]:
    """Knowledge triples (for both roles) or each role's topic snippets, before the draft."""
    out = _Extracted()
    if knowledge:
        done = _extract(loop, loop.model, "knowledge", "", knowledge_max, out)
        loop.summarizer_extra = loop.evaluator_extra = f"Relationships:\n{done}"
    if topic:
        for role, llm in (("summarizer", loop.model), ("evaluator", loop.evaluator)):
            done = _extract(loop, llm, "topic", topic, 10, out)
            extra = f"Topic sentence: {topic}\nRelevant snippets:\n{done}"
            setattr(loop, f"{role}_extra", extra)
    return out.calls, out.steps


def _extract(loop: Loop, llm: LLM, kind: str, topic: str, count: int, out: _Extracted) -> str:
    prompt = loop.prompts.extraction(kind, loop.source, topic, count)
    completion = llm.complete(
        prompt, max_tokens=600, temperature=loop.temperature, purpose=f"summit/extract_{kind}"
    )
    out.calls.append(completion)
    text = completion.text.strip()
    out.steps.append(
        TraceStep(f"extract_{kind}", completion.call_id, {"role": llm.name, "text": text})
    )
    return text


__all__ = [
    "summarize",
    "ROLES",
    "IGNORES",
    "PROMPT_DIRS",
    "VALUES",
    "PLUGIN_PARAMS",
    "estimate",
    "trace_view",
    "Feedback",
    "parse_feedback",
]
"""What the module declares as a plugin (the Protocol ``runner.api.StrategyModule`` reads it),
and the feedback parser its tests use."""
