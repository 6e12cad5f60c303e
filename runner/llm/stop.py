"""The job's stop signal: an event that remembers the failure that set it.

A job runs its documents, and a strategy its chunks, on threads that each wait on their
own futures in order. A failure that every later call would repeat (a rejected API key)
used to stop the job only once it had surfaced through those waits: a strategy waiting
for chunk 0 learns of chunk 3's failure when chunk 0 is done, and meanwhile its other
threads and the other documents kept calling the model. So the failure stops the job
where it happens, and the run reports that failure, not the ``Cancelled`` errors it
caused in the other threads.
"""

from __future__ import annotations

import threading


class Stop(threading.Event):
    """A ``threading.Event`` (set: no further model calls) with the failure that set it."""

    def __init__(self) -> None:
        """Not set; no cause."""
        super().__init__()
        self._lock = threading.Lock()
        self.cause: BaseException | None = None
        """The first failure that stopped the job (None: not stopped, or stopped from
        outside, by a signal or the end of the run)."""

    def stop(self, cause: BaseException) -> None:
        """Stop the job because of ``cause``; the first cause is kept."""
        with self._lock:
            if not self.is_set():
                self.cause = cause
                self.set()


__all__ = ["Stop"]
