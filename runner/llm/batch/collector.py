"""A job's batchable requests gathered, submitted, waited for and answered into the cache.

A metric asks its judge as it would online: ``Gateway.complete`` blocks its thread. With
``<role>.batch=true`` a cache miss comes here instead of going to the provider: the request
waits beside the others, and when ``batch_gather`` seconds pass without a new one (every
thread that could ask is waiting for an answer), the gathered requests go out as one batch
(split only at the provider's limits). One driver thread per endpoint polls the batches every
``batch_poll`` seconds; when a batch ends, each answer is stored in the response cache under
its request's key and its caller wakes up with a ``Completion`` priced at the batch price.
Requests that depend on earlier answers arrive later and make the next batch: a job waits one
batch round per dependent step.

Before a request is submitted the ledger (``ledger.py``) is asked whether a live batch of the
same endpoint already holds it (a killed job's, another job's sharing the cache): then it is
waited for, never sent again. A request the provider did not answer (expired, cancelled, a
server error) is resubmitted alone in a later batch, at most ``MAX_BATCHES_PER_REQUEST``
times in all; one it refused as invalid fails like an online call that failed.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.api.errors import BatchError, Cancelled, LLMError, RunnerError
from runner.api.types import Completion
from runner.llm.batch.answers import answer_of, batch_cost, cache_entry
from runner.llm.batch.ledger import BatchEntry, Ledger
from runner.llm.batch.pool import MAX_WAIT_S, SweepPool
from runner.llm.batch.protocol import (
    BatchAnswer,
    BatchFailure,
    BatchProvider,
    BatchRequest,
    BatchState,
    within_limits,
)
from runner.llm.budget import Budget
from runner.llm.cache import ResponseCache
from runner.llm.prices import Price, batch_price_of
from runner.llm.providers import new_call_id
from runner.llm.request import Request
from runner.llm.spec import ModelSpec

MAX_BATCHES_PER_REQUEST = 3
"""Batches one request may travel in before its caller gets the provider's error."""
BATCH_FANOUT = 64
"""A batched role's ``concurrency``: how many of its requests a plugin asks at once (threads
that only wait); online limits do not apply to requests that are not sent one by one."""
QUIET_REPORT_S = 600.0
"""The longest a waiting job stays silent: a line at least every 10 minutes."""
WAKE_S = 5.0
"""How often a waiting caller looks at the job's cancel flag itself: rarely, since the driver
wakes every caller when the job stops, and a job may hold thousands of waiting callers."""
TICK_S = 0.05
"""How often the driver thread looks at the clock."""


@dataclass
class _Waiter:
    """One request and the callers waiting for its answer."""

    request: Request
    done: threading.Event = field(default_factory=threading.Event)
    answer: BatchAnswer | None = None
    from_cache: bool = False
    batch_id: str = ""
    error: BaseException | None = None
    paid: bool = False
    """Set when a caller took the answer: a duplicate caller gets it as a cache hit."""


@dataclass
class _Watch:
    """A batch this job waits for."""

    entry: BatchEntry
    keys: set[str]
    """The requests of this job it answers."""


StatusHook = Callable[[str], None]
"""Told one line about the job's batches whenever it changes (the run's MLflow tag)."""


class BatchCollector:
    """One endpoint's batches within one job."""

    def __init__(
        self,
        spec: ModelSpec,
        role: str,
        provider: Callable[[], BatchProvider],
        ledger: Ledger,
        cache: ResponseCache,
        cancel: threading.Event,
        budget: Budget | None = None,
        on_status: StatusHook | None = None,
        pool: SweepPool | None = None,
    ) -> None:
        """Batches of ``spec``'s endpoint; ``provider`` makes its adapter when first needed.

        ``pool``: in a sweep, where its jobs' requests meet to be submitted together.
        """
        self.spec = spec
        self.role = role
        self._make_provider = provider
        self._provider: BatchProvider | None = None
        self.ledger = ledger
        self.cache = cache
        self.cancel = cancel
        self.budget = budget
        self.on_status = on_status
        self.pool = pool
        self._presence = pool.arrive() if pool is not None else None
        self.price: Price = batch_price_of(spec)
        self._lock = threading.Lock()
        self._provider_lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        self._pending: list[str] = []
        self._last_arrival = 0.0
        self._watching: dict[str, _Watch] = {}
        self._driver: threading.Thread | None = None
        self._first_wait: float | None = None
        self._next_poll = 0.0
        self._last_state: tuple[tuple[str, int, int], ...] | None = None
        self._last_report = 0.0
        self.submitted: list[str] = []
        """Batch ids this job submitted."""
        self.joined: list[str] = []
        """Batch ids submitted before (a killed job's, another job's) that this job waited for."""
        self.requests = 0
        """Requests this job sent in batches (resubmissions included)."""

    @property
    def who(self) -> str:
        """'judge=claude', as messages name a role."""
        return f"{self.role}={self.spec.name}"

    def provider(self) -> BatchProvider:
        """The adapter (its SDK imported on first use), made once for all threads.

        Unlocked, each document thread that asked before the first adapter existed made its
        own (and imported the SDK behind the others), delaying the job's first requests.
        """
        with self._provider_lock:
            if self._provider is None:
                self._provider = self._make_provider()
            return self._provider

    def close(self) -> None:
        """The job ends: the sweep's other jobs need not wait for its requests."""
        SweepPool.leave(self._presence)
        self._presence = None

    def accepts(self, request: Request) -> bool:
        """True when the batch API answers ``request`` as the online API would."""
        return self.provider().accepts(request)

    def ask(self, key: str, request: Request) -> Completion:
        """The answer to ``request`` (cache key ``key``), once its batch has ended."""
        with self._lock:
            waiter = self._waiters.get(key)
            if waiter is None:
                waiter = self._waiters[key] = _Waiter(request)
                self._pending.append(key)
            self._last_arrival = time.monotonic()
            self._start_driver()
        while not waiter.done.wait(WAKE_S):  # the driver wakes it; the timeout is a backstop
            if self.cancel.is_set():
                raise Cancelled(self._stopped())
        if waiter.error is not None:
            raise waiter.error
        return self._completion(waiter)

    def _completion(self, waiter: _Waiter) -> Completion:
        answer = waiter.answer
        assert answer is not None
        with self._lock:
            first = not waiter.paid and not waiter.from_cache
            waiter.paid = True
        cost = batch_cost(answer, self.price) if first else 0.0
        return Completion(
            text=answer.text,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            cost_usd=cost,
            latency_s=0.0,
            cached=not first,
            call_id=new_call_id(),
            finish_reason=answer.finish_reason,
            cached_prompt_tokens=answer.cached_prompt_tokens,
            batch_id=waiter.batch_id if first else "",
            top_logprobs=answer.top_logprobs,
        )

    def in_flight(self) -> str | None:
        """The line a stopped job prints about its batches still in flight (None: none)."""
        return self._stopped() if self._watching else None

    def _stopped(self) -> str:
        """Why a waiting caller gives up when the job stops, and what becomes of its batch."""
        ids = ", ".join(self._watching) or ", ".join(self.submitted)
        if not ids:
            return f"{self.who}: the job was stopped before its requests were submitted"
        return (
            f"{self.who}: the job was stopped while waiting for batch {ids}, which stays in "
            "flight: the same command waits for it again (nothing is sent twice)"
        )

    def _start_driver(self) -> None:
        if self._driver is None or not self._driver.is_alive():
            self._driver = threading.Thread(
                target=self._drive, name=f"batch-{self.role}", daemon=True
            )
            self._driver.start()

    def _drive(self) -> None:
        """Submit what has gathered, poll what is in flight, until no caller is left."""
        try:
            while not self.cancel.is_set():
                with self._lock:
                    if not self._pending and not self._watching:
                        self._driver = None
                        return
                    quiet = time.monotonic() - self._last_arrival
                    ready = self._pending if quiet >= self.spec.batch_gather else []
                    if ready:
                        self._pending = []
                if ready:
                    self._dispatch(ready)
                if self._watching and time.monotonic() >= self._next_poll:
                    self._poll()
                    self._next_poll = time.monotonic() + self.spec.batch_poll
                self._check_timeout()
                time.sleep(TICK_S)
            self._fail_all(Cancelled(self._stopped()))
        except BaseException as err:  # any failure reaches every caller, never a silent hang
            failure = err if isinstance(err, RunnerError) else BatchError(f"{self.who}: {err}")
            self._fail_all(failure)
            with self._lock:
                self._driver = None

    def _dispatch(self, keys: list[str]) -> None:
        """Answer from the cache, join live batches, submit the rest."""
        rest = []
        for key in keys:
            stored = self.cache.get(key)
            if stored is not None:  # another process answered it meanwhile
                self._resolve(key, answer_of(stored), from_cache=True)
            else:
                rest.append(key)
        if not rest:
            return
        with self.ledger.locked():
            fresh = self._join_held(rest)
            if fresh and self.pool is None:
                self._submit(self._items(fresh))
        if fresh and self.pool is not None:
            self._submit_pooled(fresh)
        if self._first_wait is None:
            self._first_wait = time.monotonic()
        self._next_poll = min(self._next_poll, time.monotonic() + self.spec.batch_poll)

    def _join_held(self, keys: list[str], pooled: bool = False) -> list[str]:
        """Wait for the live batches that hold some of ``keys``; return the keys left to send.

        A key no live batch holds may have been answered meanwhile by a batch already
        collected (another job's): its answer is in the cache. When that batch carried this
        job's own offer (``pooled``: another job of the sweep submitted it), the answer is this
        job's to pay for, as if it had submitted it; otherwise it is a cache hit.
        """
        held = self.ledger.holding(keys, self.spec.endpoint)
        for key, entry in held.items():
            if key in self._waiters and not self._waiters[key].batch_id:
                self._watch(entry, key, joined=entry.batch_id not in self.submitted)
        rest = [k for k in keys if k not in held and k in self._waiters]
        left = []
        carried = self.ledger.last_batch_of(rest, self.spec.endpoint) if pooled else {}
        for key in rest:
            stored = self.cache.get(key)
            if stored is None:
                left.append(key)
            elif key in carried:
                with self._lock:
                    self._waiters[key].batch_id = carried[key]
                if carried[key] not in self.joined:
                    self.joined.append(carried[key])
                self._resolve(key, answer_of(stored), from_cache=False)
            else:
                self._resolve(key, answer_of(stored), from_cache=True)
        return left

    def _items(self, keys: list[str]) -> list[BatchRequest]:
        with self._lock:
            return [BatchRequest(k, self._waiters[k].request) for k in keys if k in self._waiters]

    def _submit_pooled(self, keys: list[str]) -> None:
        """Offer ``keys`` to the sweep's pool and wait for other jobs' offers (``pool.py``).

        Then submit every offer still there, or find ours submitted by another job.
        """
        assert self.pool is not None
        ticket = self.pool.offer(self._items(keys))
        self.pool.leave(self._presence)
        self._presence = None
        start = time.monotonic()
        while not self.cancel.is_set():
            waited = time.monotonic() - start
            if waited >= MAX_WAIT_S or (
                waited >= self.spec.batch_gather and not self.pool.others_coming()
            ):
                break
            time.sleep(TICK_S)
        with self.ledger.locked():
            taken = self.pool.take(ticket)
            if taken is not None:
                self._submit(taken)
            left = self._join_held(keys, pooled=taken is None)
            if left:  # taken by a job that stopped before submitting them
                self._submit(self._items(left))

    def _submit(self, items: list[BatchRequest]) -> None:
        """Send ``items`` as one batch or more (the provider's limits); ledger first, then wait.

        ``items`` may hold other jobs' requests (a sweep's pool): this job waits for its own.
        """
        held_before = self.ledger.attempts((i.custom_id for i in items), self.spec.endpoint)
        spent = {key for key, count in held_before.items() if count >= MAX_BATCHES_PER_REQUEST}
        for key in spent:
            self._fail(
                key,
                LLMError(
                    f"{self.who}: request {key[:12]} went unanswered in "
                    f"{MAX_BATCHES_PER_REQUEST} batches; rerun to try again"
                ),
            )
        items = [i for i in items if i.custom_id not in spent]
        if not items:
            return
        if self.budget is not None:
            self.budget.check()
        provider = self.provider()
        for part in within_limits(provider, items):
            batch_id: str = self.spec.retry.run(functools.partial(provider.submit, part))[0]
            entry = BatchEntry(
                provider=provider.name,
                batch_id=batch_id,
                model=self.spec.model,
                api_base=self.spec.api_base,
                alias=self.spec.name,
                role=self.role,
                requests=[item.custom_id for item in part],
                submitted_at=time.time(),
                api_key_env=self.spec.api_key_env,
                updated_at=time.time(),
            )
            self.ledger.write(entry)
            self.submitted.append(batch_id)
            self.requests += len(part)
            for item in part:
                if item.custom_id in self._waiters:
                    self._watch(entry, item.custom_id, joined=False)
            print(
                f"{self.who}: submitted batch {batch_id} ({provider.name}, {len(part)} requests); "
                "waiting for it (python -m runner.batches lists it; a rerun after a stop "
                "waits for it again)",
                file=sys.stderr,
                flush=True,
            )

    def _watch(self, entry: BatchEntry, key: str, joined: bool) -> None:
        watch = self._watching.get(entry.batch_id)
        if watch is None:
            watch = self._watching[entry.batch_id] = _Watch(entry, set())
            if joined:
                self.joined.append(entry.batch_id)
                print(
                    f"{self.who}: waiting for batch {entry.batch_id} submitted "
                    f"{_age(entry.age_s())} ago, which holds requests of this job "
                    "(none is sent again)",
                    file=sys.stderr,
                    flush=True,
                )
        watch.keys.add(key)
        with self._lock:
            if key in self._waiters:
                self._waiters[key].batch_id = entry.batch_id

    def _poll(self) -> None:
        """Look at every batch in flight; collect those that ended."""
        provider = self.provider()
        for batch_id, watch in list(self._watching.items()):
            state: BatchState = self.spec.retry.run(functools.partial(provider.state, batch_id))[0]
            entry = watch.entry
            entry.status, entry.done, entry.failed = state.status, state.done, state.failed
            entry.ended, entry.updated_at = state.ended, time.time()
            if state.ended:
                self._collect(provider, watch)
            self.ledger.write(entry)
        self._report()

    def _collect(self, provider: BatchProvider, watch: _Watch) -> None:
        """Store an ended batch's answers, wake their callers, queue what may be asked again."""
        entry = watch.entry
        outcomes = self.spec.retry.run(lambda: provider.results(entry.batch_id))[0]
        again = []
        for key in entry.requests:
            outcome = outcomes.get(key) or BatchFailure("no result in the batch", retry=True)
            if isinstance(outcome, BatchAnswer):
                self.cache.put(key, cache_entry(outcome, self.price))
                if key in watch.keys:
                    self._resolve(key, outcome, from_cache=False)
            elif key in watch.keys:
                if outcome.retry:
                    again.append(key)
                else:
                    self._fail(
                        key,
                        LLMError(
                            f"{self.who}: batch {entry.batch_id} refused a request: {outcome.error}"
                        ),
                    )
        entry.collected = True
        del self._watching[entry.batch_id]
        if again:
            print(
                f"{self.who}: batch {entry.batch_id} left {len(again)} requests unanswered; "
                "sending only those again",
                file=sys.stderr,
                flush=True,
            )
            with self._lock:
                self._pending.extend(again)
                self._last_arrival = 0.0  # no need to gather: they go out at once

    def _check_timeout(self) -> None:
        if self._first_wait is None or not self._watching:
            return
        waited = time.monotonic() - self._first_wait
        if waited < self.spec.batch_timeout:
            return
        ids = ", ".join(self._watching)
        answered = sum(w.entry.done for w in self._watching.values())
        total = sum(len(w.entry.requests) for w in self._watching.values())
        raise BatchError(
            f"{self.who}: batch {ids} had not ended after {waited:.0f} s "
            f"({self.role}.batch_timeout={self.spec.batch_timeout:g}; {answered} of {total} "
            f"answered); it stays in flight: rerun the same command to wait for it again "
            f"(nothing is sent twice), or cancel it: python -m runner.batches cancel {ids}"
        )

    def _report(self) -> None:
        """One line on the batches in flight, to stderr and to the status hook.

        Only when a count or a status changed, or ``QUIET_REPORT_S`` after the last line: a
        day's wait at one poll a half minute would otherwise print thousands of lines.
        """
        state = tuple(
            (w.entry.status, w.entry.done, w.entry.failed) for w in self._watching.values()
        )
        now = time.monotonic()
        if state == self._last_state and now - self._last_report < QUIET_REPORT_S:
            return
        self._last_state, self._last_report = state, now
        if not self._watching:
            line = f"{self.who}: every batch answered ({len(self.submitted)} submitted)"
        else:
            parts = [
                f"{w.entry.batch_id} {w.entry.status} {w.entry.done}/{len(w.entry.requests)} "
                f"done, {w.entry.failed} failed"
                for w in self._watching.values()
            ]
            waited = time.monotonic() - (self._first_wait or time.monotonic())
            line = f"{self.who}: waiting {_age(waited)} for " + "; ".join(parts)
        print(line, file=sys.stderr, flush=True)
        if self.on_status is not None:
            self.on_status(line)

    def _resolve(self, key: str, answer: BatchAnswer, from_cache: bool) -> None:
        with self._lock:
            waiter = self._waiters.pop(key, None)
        if waiter is None:
            return
        waiter.answer, waiter.from_cache = answer, from_cache
        waiter.done.set()

    def _fail(self, key: str, err: BaseException) -> None:
        with self._lock:
            waiter = self._waiters.pop(key, None)
        if waiter is not None:
            waiter.error = err
            waiter.done.set()

    def _fail_all(self, err: BaseException) -> None:
        with self._lock:
            keys = list(self._waiters)
            self._pending = []
            self._watching = {}
        for key in keys:
            self._fail(key, err)


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
