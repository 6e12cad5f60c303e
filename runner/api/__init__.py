"""The plugin API: all a strategy, metric or data loader written outside this package imports.

It is what ``strategies/`` and ``metrics/`` themselves use, and the only part of ``runner``
that is promised to plugins. It follows the package version (``runner.api.VERSION``): names
here are removed or changed incompatibly only with a new minor version (0.1 -> 0.2 while the
version is below 1.0), and each such change is listed on the docs' Plugin API page
(``docs/reference/plugin-api.md``). Anything else of
``runner`` may change in any release.

A strategy module declares ``ROLES``, ``IGNORES``, ``PROMPT_DIRS`` and
``summarize(chunks, <roles>, *, <params>) -> StrategyResult``; a metric module declares
``ROLES``, ``PROMPT_DIRS`` and ``setup(<roles>, *, <params>) -> Metric`` (optionally
``CATEGORIES``, the kinds of error its values count, for the viewer's legend and the report's
figure; its ``Metric`` may name ``read_back`` values and give ``verdicts(result)`` for the
document's trace, and overrides ``score_input(item: ScoreInput)`` instead of ``score`` when it
needs the document's id or the data's ``extras``, see ``runner.api.metric``); a data loader
declares ``KEYS`` and ``load(*, <keys>) -> list[Document]`` (or ``list[WorkItem]``: summaries
made elsewhere, with what the data says about them in ``extras``).
A metric whose score people can give too declares ``HUMAN = HumanFormat(...)``
(``runner.api.human_format``: ``CoherenceAnnotation``, ``Span``, ``Relation``,
``HumanDataError``): its human-judgment format, which ``runner.human``, ``runner.annotate``
and the meta-evaluation read, record and compare through it. A metric whose human judgments
come as files of their own (StorySumm's, FABLES' releases) declares ``HUMAN_FILES``, a tuple of
``HumanFile`` readers giving ``ClaimsJudgment`` values (summary label, claims' labels), which
``python -m runner.annotate import FILE`` finds by the file's shape. The kinds of Label Studio
task people annotate for it are its ``HUMAN_TASKS``, a tuple of ``HumanTask``
(``runner.api.human_task``: its config, its controls, what a task shows, what one person's
answers mean; ``span_task(HUMAN)`` is a span format's), which ``python -m runner.annotate
export KIND`` and ``import`` find as they find the core's ``preference``. Its tables of agreement
with people come from ``meta_tables(inputs)`` (``runner.api.meta``), which
``python -m runner.report meta=true`` asks of every built-in and installed metric; a
validator's verdict on an annotation (BooookScore's Appendix J) is a ``Validation``, one of
``VALIDATION_VERDICTS``.
The required part of each is a typing Protocol (``StrategyModule``, ``MetricModule``,
``DataModule``; ``runner.api.contracts``): mypy checks a plugin module assigned to one, and
``runner/plugins/contract.py`` checks the same members when it is loaded; the docs' guides "Write a
strategy" and "Write a metric" (``docs/guides/``) walk through an example package
(``examples/plugin/``).

A strategy or metric may declare ``VALUES = {name: Value(title=..., range=(low, high),
better="higher" | "lower" | None, kind=..., series=...)}`` (``runner.api.value``): the facts about
the values it returns, which the report's titles and axes, the console, the viewer and the
meta-evaluation's direction read from the run; an undeclared value is titled by its key.

A strategy built on another asks for it by name with ``plugin("strategy", name)``
(``runner.api.lookup``) and declares the parameter that names it in ``PLUGIN_PARAMS``
(``{"draft": "strategy"}``): the job then checks the name before it starts, and the other
plugin's identity and prompts are part of the fingerprint.

A strategy or metric may also declare ``estimate(inputs)``, the calls it makes per document
(``StrategyEstimateInput``) or per summary (``MetricEstimateInput``) as ``Phase``s, each role's
answer lengths asked of a ``Guide`` (``runner.api.estimating``); the inputs' ``params`` are
complete (the run's values over the defaults ``summarize`` or ``setup`` declares), so the hook
repeats no default. ``estimate=true`` counts them, and notes a plugin without the hook as
unknown; ``run_estimate`` calls another plugin's hook (SummIt's draft's).

A plugin that calls its models from threads of its own runs them through ``ThreadPool`` or
``thread_map(fn, items, max_workers)`` (``runner.api.threads``): each task keeps the document it
works for, so its calls are that document's in ``calls.jsonl`` and in its trace (a bare
``ThreadPoolExecutor`` starts each thread with no document).

A metric that asks a judge for JSON uses the judging toolkit, two modules of this API
imported as modules: ``runner.api.judging`` (``ask_json``: the answer read tolerantly but
never guessed, re-asked in form a bounded number of times, an unreadable one counted, never
scored; ``run_units``, ``Usage``) and ``runner.api.slots`` (``load_slots``: a prompt file's
named slots checked once in ``setup``), with ``runner.api.asking`` (a prompt file whose
shared prefix is marked for provider caches, an asker that re-asks and counts),
``runner.api.claims``, ``runner.api.questions`` and ``runner.api.retrieval`` (BM25 over a
document's chunks). A strategy that keeps its summaries within a token
budget uses ``runner.api.budgets`` and ``runner.api.generation`` (``regenerate``,
``compress``: calls repeated until the answer fits and ends at a sentence end, then a
fallback that always fits), as the hierarchical and incremental strategies do.

A plugin that reads a table people made reads it with ``read_csv`` (``runner.api.spreadsheet``),
as every command does: a spreadsheet's byte-order mark, CRLF and ``;`` separator included.
"""

from __future__ import annotations

from importlib import metadata

from runner.api.chunking import split_into_chunks
from runner.api.contracts import DataModule, MetricModule, StrategyModule
from runner.api.errors import (
    AuthError,
    ConfigError,
    DataError,
    InvalidAnswerError,
    LLMError,
    MetricError,
    RunnerError,
)
from runner.api.estimating import (
    Guide,
    MetricEstimateInput,
    Phase,
    Prompt,
    StrategyEstimateInput,
    prompt_text,
    run_estimate,
    template_tokens,
)
from runner.api.human_format import (
    CLAIM_LABELS,
    ClaimLabel,
    ClaimsJudgment,
    CoherenceAnnotation,
    HumanDataError,
    HumanFile,
    HumanFormat,
    Rating,
    Relation,
    Span,
    Validation,
)
from runner.api.human_format import VERDICTS as VALIDATION_VERDICTS
from runner.api.human_task import (
    Control,
    HumanTask,
    TaskAnswer,
    TaskInput,
    TaskItem,
    TaskSystem,
)
from runner.api.lookup import plugin
from runner.api.metric import Metric, ScoreInput, mean_values
from runner.api.span_annotation import span_task
from runner.api.spreadsheet import header_and_rows as read_csv
from runner.api.text import (
    count_tokens,
    cut_to_sentence_end,
    decode,
    encode,
    ends_with_sentence_end,
    sentence_spans,
    split_sentences,
    word_opcodes,
    words,
)
from runner.api.threads import ThreadPool, thread_map
from runner.api.trace_view import Chart, Listed, Node, Round, Section, Series, Step, picked
from runner.api.types import (
    LLM,
    Chunk,
    Completion,
    Document,
    Embedder,
    Message,
    MetricResult,
    StrategyResult,
    TraceStep,
    Verdict,
    WorkItem,
)
from runner.api.value import Value


def _version() -> str:
    try:
        return metadata.version("summarization-runner")
    except metadata.PackageNotFoundError:  # a clone used without installing it
        return "0+unknown"


VERSION = _version()
"""The installed package's version, which versions this API."""

__all__ = [
    "CLAIM_LABELS",
    "ClaimLabel",
    "ClaimsJudgment",
    "HumanFile",
    "HumanTask",
    "Rating",
    "Control",
    "TaskAnswer",
    "TaskInput",
    "TaskItem",
    "TaskSystem",
    "span_task",
    "LLM",
    "VERSION",
    "Chart",
    "Listed",
    "Node",
    "Round",
    "Section",
    "Series",
    "Step",
    "picked",
    "plugin",
    "AuthError",
    "Chunk",
    "DataModule",
    "MetricModule",
    "StrategyModule",
    "CoherenceAnnotation",
    "Completion",
    "ConfigError",
    "DataError",
    "Document",
    "Embedder",
    "Guide",
    "HumanDataError",
    "HumanFormat",
    "InvalidAnswerError",
    "LLMError",
    "Message",
    "Metric",
    "MetricEstimateInput",
    "Phase",
    "Prompt",
    "StrategyEstimateInput",
    "Relation",
    "Span",
    "VALIDATION_VERDICTS",
    "Validation",
    "MetricError",
    "MetricResult",
    "RunnerError",
    "ScoreInput",
    "StrategyResult",
    "ThreadPool",
    "TraceStep",
    "Value",
    "Verdict",
    "WorkItem",
    "count_tokens",
    "cut_to_sentence_end",
    "decode",
    "encode",
    "prompt_text",
    "run_estimate",
    "read_csv",
    "ends_with_sentence_end",
    "mean_values",
    "split_into_chunks",
    "sentence_spans",
    "split_sentences",
    "thread_map",
    "template_tokens",
    "word_opcodes",
    "words",
]
