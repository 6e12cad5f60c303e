"""The documents of a job: summarize, then score, several at once, stopping together.

When one document fails, the job's cancel event is set: every gateway refuses its next
call, queued documents never start, and the first failure is what the run reports. A
document whose summary came with the data skips the strategy.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from runner.chunking import split_into_chunks
from runner.job import Job
from runner.progress import Progress
from runner.types import DocumentOutcome, StrategyResult, TraceStep, WorkItem


def run_documents(job: Job, progress: Progress) -> list[DocumentOutcome]:
    """Every document's outcome, in input order; raises the first failure."""
    locks = {
        name: contextlib.nullcontext() if metric.thread_safe else threading.Lock()
        for name, metric in job.metrics.items()
    }

    def one(item: WorkItem) -> DocumentOutcome:
        outcome = process(item, job, locks)
        progress.doc_done()
        return outcome

    pool = ThreadPoolExecutor(max_workers=job.workers, thread_name_prefix="doc")
    futures = [pool.submit(one, item) for item in job.items]
    try:
        for future in as_completed(futures):
            future.result()  # the first failure, in the order failures happen
    except BaseException:
        job.cancel.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [f.result() for f in futures]


def process(
    item: WorkItem, job: Job, locks: Mapping[str, contextlib.AbstractContextManager[Any]]
) -> DocumentOutcome:
    """Summary (made or given) and scores of one document."""
    result = summarize(item, job)
    scores = {}
    for name, metric in job.metrics.items():
        with locks[name]:
            scores[name] = metric.score(item.source, result.summary)
    return DocumentOutcome(item.doc_id, result, scores)


def summarize(item: WorkItem, job: Job) -> StrategyResult:
    """The strategy's summary, or the one the data gave (taken as is)."""
    if item.summary is not None:
        step = TraceStep(kind="given", call_id="", detail={"text": item.summary})
        return StrategyResult(summary=item.summary, trace=(step,), counters={})
    assert item.source is not None
    chunks = split_into_chunks(item.source.text, job.config.chunk)
    roles = {role: job.roles[role] for role in job.strategy.ROLES}
    result = job.strategy.summarize(chunks, **roles, **job.config.strategy_params)
    assert isinstance(result, StrategyResult)
    return result
