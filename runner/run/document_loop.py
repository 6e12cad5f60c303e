"""The documents of a job: summarize, then score, several at once, stopping together.

With ``on_error=fail`` (the default), when one document fails the job's cancel event is
set (``runner/llm/stop.py``): every gateway refuses its next call, queued documents never
start, and the first failure is what the run reports, not the ``Cancelled`` it caused in
the others. A rejected key sets it from the gateway, before the document has failed. With
``on_error=continue`` a failed document is recorded with its cause and the others go on;
what would fail every document anyway (a reached budget, a rejected key, an interrupt)
still stops the job, and so does the failure of every document (there is nothing to
report). A document whose summary came with the data skips the strategy.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from runner.api.chunking import split_into_chunks
from runner.api.errors import AuthError, BatchError, BudgetExceeded, Cancelled, PluginContractBreach
from runner.api.metric import ScoreInput
from runner.api.types import (
    DocumentOutcome,
    JudgedSample,
    MetricResult,
    StrategyResult,
    TraceStep,
    WorkItem,
)
from runner.llm.call_log import for_document
from runner.plugins.values import declared
from runner.reliability.samples import pool
from runner.run import plugin_calls
from runner.run.prepare import Job, Replica
from runner.run.progress import Progress

STOPS_THE_JOB = (BudgetExceeded, AuthError, BatchError, Cancelled, PluginContractBreach)
"""Failures that would repeat for every document: never recorded per document."""


@dataclass(frozen=True)
class Done:
    """What became of the documents."""

    outcomes: list[DocumentOutcome]
    """The finished documents, in input order."""
    failures: dict[str, str] = field(default_factory=dict)
    """doc_id -> the cause, for documents that failed under ``on_error=continue``."""


def run_documents(job: Job, progress: Progress) -> Done:
    """Every document's outcome, in input order; raises the first failure that stops the job."""
    locks = {
        name: contextlib.nullcontext() if metric.thread_safe else threading.Lock()
        for name, metric in job.metrics.items()
    }
    tolerate = job.config.on_error == "continue"
    errors: dict[str, Exception] = {}

    def one(item: WorkItem) -> DocumentOutcome | None:
        try:
            outcome: DocumentOutcome | None = process(item, job, locks)
        except Exception as err:
            if not tolerate or isinstance(err, STOPS_THE_JOB):
                job.cancel.stop(err)  # now: the other documents stop at their next call
                raise
            errors[item.doc_id] = err
            outcome = None
        progress.doc_done(item.doc_id)
        return outcome

    pool = ThreadPoolExecutor(max_workers=job.workers, thread_name_prefix="doc")
    futures = [pool.submit(one, item) for item in job.items]
    try:
        for future in as_completed(futures):
            future.result()  # the first failure, in the order failures happen
        if errors and len(errors) == len(futures):
            raise next(iter(errors.values()))  # every document failed: the run has no result
    except BaseException as err:
        job.cancel.set()
        pool.shutdown(wait=False, cancel_futures=True)
        stopped_by = job.cancel.cause if isinstance(err, Cancelled) else None
        if stopped_by is None:
            raise
    else:
        pool.shutdown()
        return _done(futures, errors, job)
    raise stopped_by  # what stopped the job, not a document it stopped; its own traceback


def _done(
    futures: list[Future[DocumentOutcome | None]], errors: dict[str, Exception], job: Job
) -> Done:
    outcomes = [o for o in (f.result() for f in futures) if o is not None]
    order = [item.doc_id for item in job.items if item.doc_id in errors]
    return Done(outcomes, {doc: f"{type(errors[doc]).__name__}: {errors[doc]}" for doc in order})


def process(
    item: WorkItem, job: Job, locks: Mapping[str, contextlib.AbstractContextManager[Any]]
) -> DocumentOutcome:
    """Summary (made or given) and scores of one document; its calls are logged as its own."""
    with for_document(item.doc_id):
        result = summarize(item, job)
        scores, samples, judges = {}, {}, {}
        for name, metric in job.metrics.items():
            module = job.config.metric_module(name)
            scored = ScoreInput(item.source, result.summary, item.doc_id, item.extras)
            first = job.config.panel[0] if job.config.panel else ""
            replicas = (Replica(first, 0, metric), *job.replicas.get(name, ()))
            with locks[name]:
                results = _score_replicas(name, replicas, module, scored, metric.thread_safe)
            scores[name] = results[0]
            if len(results) == 1:
                continue
            facts = declared(module, metric)
            samples[name] = tuple(
                JudgedSample(r.judge, r.slot, dict(done.values))
                for r, done in zip(replicas, results, strict=True)
            )
            per_judge = {
                judge: pool(name, [d for r, d in zip(replicas, results, strict=True)
                                   if r.judge == judge], facts)
                for judge in dict.fromkeys(r.judge for r in replicas)
            }  # fmt: skip
            scores[name] = pool(name, list(per_judge.values()), facts)  # the panel's value
            if job.config.panel:
                judges[name] = per_judge
    return DocumentOutcome(item.doc_id, result, scores, samples, judges)


def _score_replicas(
    name: str, replicas: Sequence[Replica], module: ModuleType, item: ScoreInput, at_once: bool
) -> list[MetricResult]:
    """Each replica's result (one judge's samples, a panel's members), in their order.

    A thread-safe metric's replicas are asked at once: in batch mode each waits for its
    provider batch, and one after another a judge's K samples would wait for K batches in
    turn (each up to the provider's 24 hours) instead of sharing one. Each thread runs in a
    copy of this one's context, so its calls are logged as this document's. The first failure
    is raised at once, not after the others' waits: the job's stop then ends those.
    """
    if len(replicas) == 1 or not at_once:
        return [plugin_calls.score(name, r.metric, module, item) for r in replicas]
    pool = ThreadPoolExecutor(len(replicas), thread_name_prefix="replica")
    try:
        futures = [
            pool.submit(
                contextvars.copy_context().run, plugin_calls.score, name, r.metric, module, item
            )
            for r in replicas
        ]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            error = future.exception() if future in done else None
            if error is not None:
                raise error
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def summarize(item: WorkItem, job: Job) -> StrategyResult:
    """The strategy's summary, or the one the data gave (taken as is)."""
    if item.summary is not None:
        step = TraceStep(kind="given", call_id="", detail={"text": item.summary})
        return StrategyResult(summary=item.summary, trace=(step,), counters={})
    assert item.source is not None
    chunks = split_into_chunks(item.source.text, job.config.chunk)
    roles = {role: job.roles[role] for role in job.strategy.ROLES}
    params = job.config.strategy_params
    return plugin_calls.summarize(job.strategy, job.config.strategy, chunks, roles, params)
