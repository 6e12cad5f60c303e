"""The job's calls into the strategy and the metrics, with what they return checked.

The plugin API (``runner/api/types.py``, ``runner/api/metric.py``) says what each call returns:
``summarize`` a ``StrategyResult`` (a ``str`` summary, numbers as counters), ``setup`` a
``Metric``, ``score`` a ``MetricResult`` of numbers, ``reduce`` a dict of numbers holding
every ``headline`` value. A value that breaks it is refused here, where the plugin can be
named, instead of failing later in the recording (``could not convert string to float``) or
passing silently (a headline never given is a metric never logged). Exceptions and the
line that names the plugin: ``runner/run/plugin_errors.py``.
"""

from __future__ import annotations

import inspect
import reprlib
from collections.abc import Mapping, Sequence
from numbers import Real
from types import ModuleType
from typing import Any

from runner.api.metric import Metric, ScoreInput
from runner.api.types import Chunk, MetricResult, StrategyResult, TraceStep, Verdict
from runner.run.plugin_errors import BEFORE_THE_RUN, IN_THE_RUN, call, plugin

STRATEGY_FIX = "return runner.api.StrategyResult(summary=<str>, ...) with numbers as counters"
SCORE_FIX = "return runner.api.MetricResult(values={<name>: <number>}) (NaN when undecidable)"


def summarize(
    strategy: ModuleType, name: str, chunks: list[Chunk], roles: Mapping[str, Any], params: Any
) -> StrategyResult:
    """``strategy.summarize(chunks, <roles>, **params)``, checked."""
    who = plugin("strategy", name, strategy)
    result = call(who, IN_THE_RUN, strategy.summarize, chunks, **roles, **params)
    problem = strategy_problem(result)
    if problem:
        raise who.breach(strategy.summarize, f"summarize returned {problem}", STRATEGY_FIX)
    assert isinstance(result, StrategyResult)
    return result


def set_up(label: str, module: ModuleType, roles: Mapping[str, Any], params: Any) -> Metric:
    """``module.setup(<roles>, **params)``, checked: a ``Metric`` with a tuple of names as headline.

    Runs before the MLflow run exists, so its traceback is only printed (``verbose=true``).
    """
    who = plugin("metric", label, module)
    metric = call(who, BEFORE_THE_RUN, module.setup, **roles, **params)
    if not isinstance(metric, Metric):
        raise who.breach(
            module.setup,
            f"setup returned {shown(metric)}, not a Metric",
            "return an instance of a subclass of runner.api.Metric",
        )
    headline = metric.headline
    if not isinstance(headline, (tuple, list)) or not all(isinstance(h, str) for h in headline):
        raise who.breach(
            type(metric),
            f"has headline {headline!r}, not a tuple of value names",
            'write headline = ("<value>",), or () to log every value',
        )
    return metric


def score(label: str, metric: Metric, module: ModuleType, item: ScoreInput) -> MetricResult:
    """``metric.score_input(item)``, checked: a ``MetricResult`` of numbers.

    A ``score`` of the older form (``extras`` or ``doc_id`` keywords, no ``score_input``) is
    called as it was, with the job's one deprecation line (``older_score_forms``).
    """
    who = plugin("metric", label, module, type(metric))
    older = _older_keywords(metric)
    if older:
        given = {"extras": dict(item.extras), "doc_id": item.doc_id}
        keywords = {k: given[k] for k in older}
        result = call(who, IN_THE_RUN, metric.score, item.document, item.summary, **keywords)
    else:
        result = call(who, IN_THE_RUN, metric.score_input, item)
    problem = metric_result_problem(result)
    if problem:
        raise who.breach(metric.score, f"score returned {problem}", SCORE_FIX)
    assert isinstance(result, MetricResult)
    return result


OLDER_SCORE = (
    "metric {label}: its score takes {keywords}, the older form deprecated since runner.api "
    "0.1; override score_input(self, item: runner.api.ScoreInput) instead (item.extras, "
    "item.doc_id)"
)
"""The one line a job prints for a metric whose ``score`` takes the older keywords."""


def older_score_forms(metrics: Mapping[str, Metric]) -> list[str]:
    """One line per metric of the job whose ``score`` takes the older keywords."""
    return [
        OLDER_SCORE.format(label=label, keywords=" and ".join(older))
        for label, metric in metrics.items()
        if (older := _older_keywords(metric))
    ]


def _older_keywords(metric: Metric) -> tuple[str, ...]:
    """The keywords ``extras``/``doc_id`` a ``score`` takes when ``score_input`` is Metric's own.

    (A ``score_input`` of the metric's own means it reads ``ScoreInput``: none.)
    """
    if type(metric).score_input is not Metric.score_input:
        return ()
    try:
        parameters = inspect.signature(metric.score).parameters
    except (TypeError, ValueError):
        return ()
    named = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(k for k in ("extras", "doc_id") if k in parameters and parameters[k].kind in named)


def reduce(
    label: str, metric: Metric, module: ModuleType, per_document: Mapping[str, MetricResult]
) -> dict[str, float]:
    """``metric.reduce(per_document)``, checked: numbers, every headline value among them."""
    who = plugin("metric", label, module, type(metric))
    reduced = call(who, IN_THE_RUN, metric.reduce, per_document)
    problem = numbers_problem("values", reduced)
    if problem:
        raise who.breach(metric.reduce, f"reduce returned {problem}", "return {<name>: <number>}")
    missing = [h for h in metric.headline if h not in reduced]
    if missing and per_document:
        raise who.breach(
            type(metric),
            f"declares headline {', '.join(missing)} but its values are "
            f"{', '.join(sorted(reduced)) or '(none)'}",
            "give every headline value (NaN when undecidable), or name in headline the values "
            "it gives",
        )
    return {str(k): float(v) for k, v in reduced.items()}


def warnings(
    label: str, metric: Metric, module: ModuleType, per_document: Mapping[str, MetricResult]
) -> list[str]:
    """``metric.warnings(per_document)``, checked: a list of lines."""
    who = plugin("metric", label, module, type(metric))
    found = call(who, IN_THE_RUN, metric.warnings, per_document)
    if not isinstance(found, (list, tuple)) or not all(isinstance(w, str) for w in found):
        raise who.breach(
            metric.warnings, f"warnings returned {shown(found)}", "return a list of str (or [])"
        )
    return list(found)


def verdicts(label: str, metric: Metric, module: ModuleType, result: MetricResult) -> list[Verdict]:
    """``metric.verdicts(result)``, checked: ``Verdict``s, each from a role the module declares.

    A verdict with a ``source`` (a rater outside the job) names no role.
    """
    who = plugin("metric", label, module, type(metric))
    found = call(who, IN_THE_RUN, metric.verdicts, result)
    fix = f"return a list of runner.api.Verdict (or []), each role one of ROLES {module.ROLES}"
    if not isinstance(found, (list, tuple)) or not all(isinstance(v, Verdict) for v in found):
        raise who.breach(metric.verdicts, f"verdicts returned {shown(found)}", fix)
    for verdict in found:
        if not verdict.source and verdict.role not in module.ROLES:
            raise who.breach(metric.verdicts, f"a verdict of role {verdict.role!r}", fix)
    return list(found)


def strategy_problem(result: object) -> str | None:
    """How ``result`` breaks ``StrategyResult``'s contract, in words; None when it keeps it."""
    if not isinstance(result, StrategyResult):
        return f"{shown(result)}, not a StrategyResult"
    if not isinstance(result.summary, str):
        return f"a summary of {shown(result.summary)}, not a str"
    if not isinstance(result.trace, Sequence) or not all(
        isinstance(s, TraceStep) for s in result.trace
    ):
        return f"a trace of {shown(result.trace)}, not a tuple of TraceStep"
    counters = numbers_problem("counters", result.counters)
    if counters:
        return counters
    if not isinstance(result.series, Mapping):
        return f"series of {shown(result.series)}, not a dict of name -> numbers"
    for key, values in result.series.items():
        if not isinstance(values, Sequence) or not all(_number(v) for v in values):
            return f"series[{key!r}] = {shown(values)}, not a tuple of numbers"
    return None


def metric_result_problem(result: object) -> str | None:
    """How ``result`` breaks ``MetricResult``'s contract, in words; None when it keeps it."""
    if not isinstance(result, MetricResult):
        return f"{shown(result)}, not a MetricResult"
    values = numbers_problem("values", result.values)
    if values:
        return values
    if not isinstance(result.artifacts, Mapping):
        return f"artifacts of {shown(result.artifacts)}, not a dict of file name -> content"
    if isinstance(result.notes, str) or not all(isinstance(n, str) for n in result.notes):
        return f"notes of {shown(result.notes)}, not a tuple of str"
    return None


def numbers_problem(what: str, values: object) -> str | None:
    """How ``values`` is not a dict of name -> number, in words; None when it is one."""
    if not isinstance(values, Mapping):
        return f"{what} of {shown(values)}, not a dict of name -> number"
    for key, value in values.items():
        if not _number(value):
            return f"{what}[{key!r}] = {shown(value)}, not a number"
    return None


def shown(value: object) -> str:
    """A value as a message shows it: its type and a short repr (``str 'The summa...'``)."""
    return f"{type(value).__name__} {reprlib.repr(value)}"


def _number(value: object) -> bool:
    return isinstance(value, Real)  # what float() takes without a question (bool included)
