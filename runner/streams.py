"""The screen's streams, made to survive a closed pipe.

``python -m runner -m ... | tee log`` stopped with Ctrl-C: the signal reaches ``tee`` too,
which dies first, so the runner's next line (its "stopped" line, a job's summary) goes to a
pipe nobody reads and Python raises ``BrokenPipeError``. Raised in a stop's handler, that
error turned the sweep's KILLED parent into a FAILED one. The screen is a courtesy; the
run's own record in MLflow is what counts, so a closed pipe must never fail a job or change
how it ends. Once a write finds its pipe closed, the stream's file descriptor is pointed at
``os.devnull``: every later write by this process (Python's own, logging's) and by the
processes it starts succeeds and goes nowhere, as it would have anyway.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any, TextIO


class PipeSafe:
    """A text stream whose writes and flushes ignore a closed pipe (the rest: the stream's)."""

    def __init__(self, stream: TextIO) -> None:
        """Wrap ``stream`` (``sys.stdout`` or ``sys.stderr``)."""
        self._stream = stream

    def write(self, text: str) -> int:
        """Write; a closed pipe makes this and every later write go to ``os.devnull``."""
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        """Flush; a closed pipe is not an error."""
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        """Point the stream's descriptor at ``os.devnull`` and drop what its buffer held."""
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        finally:
            os.close(null)
        with contextlib.suppress(OSError):
            self._stream.flush()  # the buffered rest, to devnull now

    def __getattr__(self, name: str) -> Any:
        """Everything else (``fileno``, ``isatty``, ``encoding``...) is the stream's."""
        return getattr(self._stream, name)


def survive_closed_pipes() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` in ``PipeSafe`` (once; streams with a descriptor).

    A stream without a descriptor (a test's capture, ``io.StringIO``) is left as it is: it
    has no pipe to lose.
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or isinstance(stream, PipeSafe):
            continue
        try:
            stream.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):
            continue
        setattr(sys, name, PipeSafe(stream))
