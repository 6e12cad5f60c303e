"""What a job writes to its MLflow run after the work: values, summaries, traces, warnings.

Kept out of the lifecycle so orchestration stays short; this module decides names and
shapes of metrics and artifacts, and ``Tracker`` is the only thing it talks to. What is
written before any work (params, tags, config, prompts, the dataset) is
``runner.run.record_setup``; ``log_setup`` is imported here too, for the lifecycle.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any

from runner.api.trace_view import VIEWS_FILE, draw
from runner.api.types import DocumentOutcome
from runner.llm.call_log import CallTotals
from runner.llm.local import perf as local_perf
from runner.plugins import categories
from runner.plugins import values as value_facts
from runner.run import plugin_calls, sampled
from runner.run.prepare import Job
from runner.run.record_setup import log_setup as log_setup  # re-exported: the lifecycle
from runner.run.usage import USAGE_FILE, kept_keys, split, usage_table
from runner.tracking.assessments import LLM_JUDGE, Feedback, log_verdicts
from runner.tracking.tags import FAILED_DOCUMENTS_TAG, HEADLINE_TAG, UNDECIDED_TAG
from runner.tracking.traces import log_traces
from runner.tracking.writer import Tracker

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Logged:
    """What the end-of-run summary shows, as logged."""

    system: dict[str, float]
    """Every run-level value: the ones logged as metrics and the counters of ``usage.json``
    (``runner/run/usage.py`` decides which is which), so Python callers lose nothing."""
    per_document: dict[str, dict[str, float]]
    """doc_id -> its values."""
    headline: tuple[str, ...]
    """The values to show first (``<metric>/<value>`` names)."""
    warnings: tuple[str, ...]
    """Why the numbers may not mean what they seem (also the run's ``runner.warnings`` tag)."""
    titles: dict[str, str]
    """The declared title of each value that has one (``runner.api.value``), by metric name."""
    agreement: tuple[str, ...] = ()
    """How far the judge's repeated samples agree, one line per value (``judge.samples``)."""


def run_warnings(job: Job, outcomes: list[DocumentOutcome]) -> list[str]:
    """Each metric's own warnings, and a note when a judging role is the embedded model."""
    found = []
    for name, metric in job.metrics.items():
        module = job.config.metric_module(name)
        found += plugin_calls.warnings(
            name, metric, module, {o.doc_id: o.scores[name] for o in outcomes}
        )
        for role in module.ROLES:
            gateway = job.role(role)
            if gateway.spec.is_local:
                found.append(
                    f"{role}={gateway.name} is the embedded 0.5B model: its {name} scores check "
                    "the pipeline, not the summaries; use an API model to judge"
                )
    return list(dict.fromkeys(found))


def log_outcomes(
    tracker: Tracker,
    job: Job,
    outcomes: list[DocumentOutcome],
    totals: CallTotals,
    timings: dict[str, float],
    failures: dict[str, str] | None = None,
) -> Logged:
    """Per-document and system values, summaries, traces, metric artifacts and warnings.

    Only headline values, values read back from the run and a few totals become MLflow
    metrics; the bookkeeping counters go to the table ``usage.json`` (``runner/run/usage.py``).

    ``failures`` (doc_id -> cause, from ``on_error=continue``) become ``failures.json``, the
    metric ``documents_failed``, the tag a report reads to leave the run out, and a warning.
    """
    failures = failures or {}
    per_doc: dict[str, dict[str, float]] = {}
    merged: dict[str, dict[str, Any]] = {}
    notes: dict[str, list[str]] = {}
    for o in outcomes:
        values = {f"strategy/{k}": float(v) for k, v in o.result.counters.items()}
        for metric, scored in o.scores.items():
            values.update({f"{metric}/{k}": float(v) for k, v in scored.values.items()})
            for file, content in scored.artifacts.items():
                merged.setdefault(file, {})[o.doc_id] = content
            notes.setdefault(o.doc_id, []).extend(scored.notes)
        per_doc[o.doc_id] = values
    for doc, members in sampled.member_values(outcomes).items():  # judges=: each member's
        per_doc[doc].update(members)
    system = system_values(job, outcomes)
    system.update(
        {
            "documents": float(len(outcomes)),
            "documents_failed": float(len(failures)),
            "calls": float(totals.calls),
            "cache_hits": float(totals.cache_hits),
            "prompt_tokens": float(totals.prompt_tokens),
            "completion_tokens": float(totals.completion_tokens),
            "cached_prompt_tokens": float(totals.cached_prompt_tokens),
            "cost_usd": totals.cost_usd,
            "wall_time_s": sum(timings.values()),
            **{f"time/{k}": v for k, v in timings.items()},
            **local_perf.snapshot(),  # the embedded model's prompt-evaluation/generation clocks
        }
    )
    kept, usage = split(system, kept_keys(job.metrics, system))
    tracker.log_metrics(kept)
    tracker.log_table(usage_table(usage), USAGE_FILE)
    tracker.log_table(_score_table(per_doc), "scores_table.json")
    log_series(tracker, outcomes)
    tracker.log_json({o.doc_id: o.result.summary for o in outcomes}, "summaries.json")
    tracker.log_json(per_doc, "scores.json")
    judged = {label: _names(m.headline, outcomes, label) for label, m in job.metrics.items()}
    if any(o.samples for o in outcomes):
        tracker.log_json(sampled.samples_artifact(outcomes), sampled.SAMPLES_FILE)
    view = getattr(job.strategy, "trace_view", None)  # optional in the contract (plugins)
    views: dict[str, Any] = {}
    for o in outcomes:
        trace = [{"kind": s.kind, "call_id": s.call_id, **s.detail} for s in o.result.trace]
        tracker.log_json(trace, f"traces/{o.doc_id}.json")
        views[o.doc_id] = draw(view, trace)
    if view is not None:
        tracker.log_json(views, VIEWS_FILE)  # what the viewer draws (runner/api/trace_view.py)
    calls_file = next((g.call_log.path for g in job.roles.values()), None)  # one CallLog per job
    log_traces(tracker.client, tracker.run_id, job.items, outcomes, failures, calls_file)
    feedback = metric_feedback(job, outcomes)  # the metrics' verdicts on those traces
    feedback += sampled.sample_feedback(job, outcomes, judged)
    if feedback:
        log_verdicts(tracker.client, tracker.run_id, feedback)
    modules = {label: job.config.metric_module(label) for label in job.metrics}
    tracker.set_tags(categories.tags(modules))
    facts = {label: value_facts.declared(modules[label], m) for label, m in job.metrics.items()}
    strategy_facts = value_facts.declared(job.strategy)
    agreed, agreement = sampled.agreement(outcomes, judged, facts)
    if agreed:
        tracker.log_metrics(agreed)
        system.update(agreed)
    tracker.set_tags(value_facts.tags(facts, strategy_facts))
    for file, content in merged.items():
        tracker.log_json(content, file)
    if any(notes.values()):
        tracker.log_json({k: v for k, v in notes.items() if v}, "notes.json")
    headline = tuple(f"{name}/{v}" for name, m in job.metrics.items() for v in m.headline)
    by_judge = [
        f"{n}/{v}"
        for n, m in job.metrics.items()
        if job.config.metric_module(n).ROLES
        for v in m.headline
    ]
    lines, nothing = undecided(by_judge, per_doc)
    if nothing:
        tracker.set_tags({UNDECIDED_TAG: json.dumps(nothing)})
    warnings = lines + run_warnings(job, outcomes) + log_failures(tracker, failures, len(outcomes))
    warnings += sampled.temperature_warning(job)
    if warnings:
        tracker.set_tags({"runner.warnings": " | ".join(warnings)})
    tracker.set_tags({HEADLINE_TAG: json.dumps(headline)})  # the viewer's columns
    show_in_runs_table(tracker, job, headline)
    titles = {
        f"{label}/{name}": value.title
        for label, declared in {**facts, value_facts.STRATEGY: strategy_facts}.items()
        for name, value in declared.items()
        if value.title
    }
    return Logged(system, per_doc, headline, tuple(warnings), titles, tuple(agreement))


def _names(
    headline: tuple[str, ...], outcomes: list[DocumentOutcome], label: str
) -> tuple[str, ...]:
    """A metric's headline values; all its values when it names none (``headline = ()``)."""
    if headline:
        return headline
    return tuple(sorted({k for o in outcomes if label in o.scores for k in o.scores[label].values}))


UNDECIDED_LISTED = 3
"""Documents named in an undecided line; the rest are counted."""


def undecided(
    judged: list[str], per_doc: dict[str, dict[str, float]]
) -> tuple[list[str], list[str]]:
    """A line per judged headline value some documents have no number for; those none has.

    A judge's answer that says neither yes nor no (or cannot be parsed) leaves the document's
    value NaN: the mean is over the decided documents only, and the screen says how many
    were not, naming them, so a mean of one decided document is never read as a mean of
    ten. A value undecided for every document is no result at all: the second list, tagged
    on the run (``UNDECIDED_TAG``) and named by reports.
    """
    lines, nothing = [], []
    for key in judged:
        missing = [d for d, v in per_doc.items() if math.isnan(v.get(key, math.nan))]
        if not missing:
            continue
        named = ", ".join(missing[:UNDECIDED_LISTED])
        named += (
            f" and {len(missing) - UNDECIDED_LISTED} more"
            if len(missing) > UNDECIDED_LISTED
            else ""
        )
        if len(missing) == len(per_doc):
            nothing.append(key)
            lines.append(
                f"{key}: undecided for every document ({len(missing)} of {len(per_doc)}: "
                f"{named}): the judge decided nothing, so the run has no {key} value; see "
                "notes.json for its answers"
            )
        else:
            lines.append(
                f"{key}: {len(missing)} of {len(per_doc)} documents undecided ({named}): the "
                f"mean is over the other {len(per_doc) - len(missing)}; see notes.json"
            )
    return lines, nothing


def metric_feedback(job: Job, outcomes: list[DocumentOutcome]) -> list[Feedback]:
    """Every metric's verdicts on each document, sourced from the model of the verdict's role.

    A verdict with its own ``source`` (a rater outside the job) is sourced from that.
    """
    out = []
    for label, metric in job.metrics.items():
        module = job.config.metric_module(label)
        for o in outcomes:
            for verdict in plugin_calls.verdicts(label, metric, module, o.scores[label]):
                out.append(
                    Feedback(
                        o.doc_id,
                        verdict.name,
                        verdict.value,
                        LLM_JUDGE,
                        verdict.source or job.role(verdict.role).spec.model,
                        verdict.rationale,
                        dict(verdict.metadata),
                    )
                )
    return out


def show_in_runs_table(tracker: Tracker, job: Job, headline: tuple[str, ...]) -> None:
    """The headline values, cost and the main settings as columns of the runs table.

    Those are the views the links open: the experiment's (``runner.ui.experiment_url``), the
    run's (``run_url``, printed when the job ends) and its sweep's (``sweep_url``), whose
    columns also hold the swept keys. A convenience: a failure is logged, never raised, so it
    cannot fail a run whose results are already stored.
    """
    from runner.sweep.parent import current_sweep
    from runner.tracking.runs_view import shown_params

    sweep = current_sweep()
    params = shown_params(job.roles, sweep.keys if sweep else ())
    try:
        tracker.show_columns([*headline, "cost_usd"], params, sweep.run_id if sweep else "")
    except Exception as err:  # noqa: BLE001 - the run's results are logged; this is a view
        _LOG.warning("could not set the runs table's columns: %s", err)


def log_failures(tracker: Tracker, failures: dict[str, str], finished: int) -> list[str]:
    """``failures.json`` and the ``runner.documents_failed`` tag; the warning line to show."""
    if not failures:
        return []
    tracker.log_json(failures, "failures.json")
    tracker.set_tags({FAILED_DOCUMENTS_TAG: str(len(failures))})
    first, cause = next(iter(failures.items()))
    line = (
        f"{len(failures)} of {len(failures) + finished} documents failed and are left out of "
        "every value (on_error=continue; reports do not average this run); "
        f"first: {first}: {cause[:300]} (all causes in failures.json)"
    )
    return [line]


def _score_table(per_doc: dict[str, dict[str, float]]) -> dict[str, list[Any]]:
    """One row per document, one column per value (None where a document has none).

    The per-document view, instead of thousands of ``doc/...`` metric keys.
    """
    keys = sorted({k for values in per_doc.values() for k in values})
    table: dict[str, list[Any]] = {"doc_id": list(per_doc)}
    for key in keys:
        table[key] = [_finite(values.get(key)) for values in per_doc.values()]
    return table


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def log_series(tracker: Tracker, outcomes: list[DocumentOutcome]) -> None:
    """Each strategy series as MLflow steps, per document and as the mean over the documents.

    The mean at a step is over the documents that reached it; the UI draws e.g. SummIt's score
    curve from it.
    """
    names = sorted({name for o in outcomes for name in o.result.series})
    for name in names:
        by_step: dict[int, list[float]] = {}
        for o in outcomes:
            values = o.result.series.get(name, ())
            for step, value in enumerate(values):
                tracker.log_metrics({f"doc/{o.doc_id}/strategy/{name}": value}, step=step)
                if not math.isnan(value):
                    by_step.setdefault(step, []).append(value)
        for step, finite in sorted(by_step.items()):
            tracker.log_metrics({f"strategy/{name}": sum(finite) / len(finite)}, step=step)


def system_values(job: Job, outcomes: list[DocumentOutcome]) -> dict[str, float]:
    """Each metric's own reduction, and the mean of each strategy counter.

    A reduction is checked (``runner/run/plugin_calls.py``): numbers, the headline among them.
    """
    out: dict[str, float] = {}
    for name, metric in job.metrics.items():
        per_document = {o.doc_id: o.scores[name] for o in outcomes}
        reduced = plugin_calls.reduce(name, metric, job.config.metric_module(name), per_document)
        out.update({f"{name}/{k}": v for k, v in reduced.items()})
        for judge in job.config.panel:  # judges=: each member's values reduced as the panel's
            mine = {o.doc_id: o.judges[name][judge] for o in outcomes if name in o.judges}
            if mine:
                found = plugin_calls.reduce(name, metric, job.config.metric_module(name), mine)
                out.update({f"{name}:{judge}/{k}": v for k, v in found.items()})
    counters = [o.result.counters for o in outcomes]
    for key in sorted({k for c in counters for k in c}):
        finite = [float(c[key]) for c in counters if key in c and not math.isnan(float(c[key]))]
        out[f"strategy/{key}"] = sum(finite) / len(finite) if finite else math.nan
    return out
