"""Typed values passed between modules.

Strategies and metrics import these (never litellm, mlflow or hydra), so the gateway is
described here as a Protocol: what ``runner.llm.gateway.Gateway`` offers a strategy or metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Document:
    """One input to summarize."""

    doc_id: str
    """Stable identifier: file stem or the pickle's key; keys of summaries.json."""
    text: str
    """The full text, UTF-8 decoded, unmodified."""
    references: tuple[str, ...] = ()
    """Optional human reference summaries."""


@dataclass(frozen=True)
class WorkItem:
    """One document of a job: its source, or a summary made elsewhere, or both."""

    doc_id: str
    """The document's id (keys of summaries.json and scores.json)."""
    source: Document | None
    """The source text; None when scoring summaries whose sources were not given."""
    summary: str | None = None
    """A summary made elsewhere (``data=summaries``); None when the strategy makes one."""
    extras: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """What the data says about this summary beyond its text, for the metrics that read it
    (a metric's ``score`` or ``estimate`` with an ``extras`` keyword gets it): StorySumm's and
    FABLES' ``claims`` (a tuple of atomic claims, in order). Empty for most sources."""


@dataclass(frozen=True)
class Chunk:
    """A contiguous slice of a document, whole paragraphs where possible."""

    index: int
    """Position in the document, from 0."""
    text: str
    """The slice; joining all chunks' text gives back the document."""
    n_tokens: int
    """Length in tiktoken cl100k_base tokens."""


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    """'system', 'user' or 'assistant'."""
    content: str
    """The text."""
    cache: bool = False
    """Mark the end of a shared prefix worth caching (Anthropic cache_control); others ignore it."""


@dataclass(frozen=True)
class Completion:
    """The result of one gateway call, with its accounting."""

    text: str
    """The model's answer."""
    prompt_tokens: int
    """Prompt tokens as reported by the provider."""
    completion_tokens: int
    """Generated tokens as reported by the provider."""
    cost_usd: float
    """Cost of the call in USD (0 for cache hits and for the local model)."""
    latency_s: float
    """Wall time of the call, including retries (0 for cache hits)."""
    cached: bool
    """True when served from the on-disk response cache."""
    call_id: str
    """Unique id of this call, as written to calls.jsonl."""
    finish_reason: str = "stop"
    """'stop', 'length', ... as reported by the provider."""
    cached_prompt_tokens: int = 0
    """Prompt tokens the provider served from its own prefix cache, when reported."""
    top_logprobs: tuple[dict[str, float], ...] = ()
    """Per generated token, the top alternatives' log-probabilities (only when asked for
    with ``top_logprobs=k`` and the provider returns them; G-Eval's weighted score)."""
    batch_id: str = ""
    """The provider batch that answered this call ('' for an online call or a cache hit)."""


class LLM(Protocol):
    """What strategies and metrics need from a model."""

    name: str
    context_window: int
    concurrency: int
    """Calls worth having in flight at once (1 for the in-process model, to keep its KV cache)."""
    batch: bool
    """True when this role's calls wait for a provider batch (``<role>.batch=true``): ask
    every request that does not need another's answer at once, with no cache-warming first
    call, so that they travel in one batch."""

    def complete(
        self,
        messages: Sequence[Message] | str,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        sample: int = 0,
        purpose: str = "",
        response_format: dict[str, Any] | None = None,
        top_logprobs: int = 0,
    ) -> Completion:
        """Send one chat request and return the answer.

        ``sample`` gives a repeated request its own cache slot (a re-ask, a regeneration);
        ``purpose`` labels the call in calls.jsonl; ``response_format`` asks for JSON where
        the provider supports it; ``top_logprobs=k`` asks for each generated token's k most
        likely alternatives (``Completion.top_logprobs``, empty when the provider has none).
        """
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the project's tokenizer (cl100k_base)."""
        ...


class Embedder(Protocol):
    """What metrics need from the ``embedder`` role: vectors for texts."""

    name: str

    def embed(self, texts: Sequence[str], *, purpose: str = "") -> list[list[float]]:
        """One vector per text, in order (cached per text by the gateway)."""
        ...

    def missing_extra(self) -> str | None:
        """Why the embedder cannot run here (an optional package is absent), else None."""
        ...


@dataclass(frozen=True)
class TraceStep:
    """One step of a strategy, for the per-document trace artifact."""

    kind: str
    """What the step did: 'summarize', 'merge', 'compress', ..."""
    call_id: str
    """The gateway call behind it ('' when no call was made)."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Step-specific facts (level, children, tokens, attempts, text, ...)."""


@dataclass(frozen=True)
class StrategyResult:
    """What a strategy returns for one document."""

    summary: str
    """The final summary."""
    trace: tuple[TraceStep, ...] = ()
    """Every step taken, in order."""
    counters: dict[str, float] = field(default_factory=dict)
    """Numbers to log as metrics (levels, merges, truncated tokens, ...)."""
    series: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Values per step (e.g. SummIt's score per iteration), logged as MLflow step series."""


@dataclass(frozen=True)
class MetricResult:
    """What a metric returns for one (document, summary) pair."""

    values: dict[str, float]
    """Named numbers; NaN where the metric could not decide."""
    artifacts: dict[str, Any] = field(default_factory=dict)
    """JSON-serialisable extras, merged across documents by the runner."""
    notes: tuple[str, ...] = ()
    """Why a value is NaN or was skipped."""


@dataclass(frozen=True)
class Verdict:
    """One verdict a metric's model gave on one document's summary (``Metric.verdicts``).

    The job writes it as an MLflow assessment on that document's trace, its source the model
    of the metric's role ``role``, so the Traces tab shows what the judge said beside the
    summary, under ``name``.
    """

    name: str
    """The assessment's name (e.g. ``coherence_error``, or the metric's score)."""
    value: float | str | bool
    """A score, a label, or the error type(s) as one string."""
    rationale: str = ""
    """Why: the questions raised, how a score was counted."""
    metadata: dict[str, str] = field(default_factory=dict)
    """What was judged (e.g. the ``sentence``)."""
    role: str = "judge"
    """The metric's model role that gave it: its model string is the assessment's source."""
    source: str = ""
    """Who gave it when no model of the job did (a rater's outputs read from a file,
    ``metrics=given``): the assessment's source id, in place of the role's model; ``role``
    is then not read."""


@dataclass(frozen=True)
class JudgedSample:
    """One judge's one sample of a metric's values for one document."""

    judge: str
    """The panel member's alias ('' for the one judge)."""
    sample: int
    """0 to ``judge.samples`` - 1."""
    values: dict[str, float]


@dataclass(frozen=True)
class DocumentOutcome:
    """Summary, trace and scores of one document."""

    doc_id: str
    """The document's id."""
    result: StrategyResult
    """The strategy's summary, trace and counters."""
    scores: dict[str, MetricResult]
    """Metric name -> its result."""
    samples: dict[str, tuple[JudgedSample, ...]] = field(default_factory=dict)
    """Metric name -> every judge's samples (``judge.samples=K``, ``judges=``; the result is
    then their pool); empty when one judge was asked once."""
    judges: dict[str, dict[str, MetricResult]] = field(default_factory=dict)
    """Metric name -> panel member -> its result (its samples pooled); empty without a panel."""
