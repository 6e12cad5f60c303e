"""Threads for a plugin's own fan-out that keep the caller's context (plugin API).

The job attributes each model call to its document through a context variable (the call log's
``DOCUMENT``), so ``calls.jsonl`` and the document's trace know whose call it was. A new
thread starts with an empty context: a call made from a bare ``ThreadPoolExecutor`` belongs
to no document. ``ThreadPool`` runs every task in a copy of the context it was submitted
from, and ``thread_map`` is the common case of it; a strategy or metric that calls its models
from threads uses one of the two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")


class ThreadPool(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose tasks run in a copy of the submitter's context.

    ``submit`` copies the context of the thread that submits (the document being worked on)
    and runs the task inside the copy; ``map`` goes through ``submit``, so it does the same.
    """

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)`` in a copy of the current context."""
        context = copy_context()

        def task() -> T:
            return context.run(fn, *args, **kwargs)

        return super().submit(task)


def thread_map(fn: Callable[[T], R], items: Iterable[T], max_workers: int) -> list[R]:
    """``[fn(item) for item in items]`` on up to ``max_workers`` threads, results in order.

    Each call keeps the caller's context (its model calls stay the document's). The first
    error, in item order, is raised once the calls already started have ended; the calls not
    started yet are cancelled.
    """
    work = list(items)
    if not work:
        return []
    with ThreadPool(max_workers=max(1, min(max_workers, len(work)))) as pool:
        futures = [pool.submit(fn, item) for item in work]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise


__all__ = ["ThreadPool", "thread_map"]
