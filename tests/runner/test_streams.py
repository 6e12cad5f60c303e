"""A closed pipe never fails a job: ``runner.streams.PipeSafe`` on a real pipe whose reader is gone.

The whole-command case (a sweep piped to ``tee``, Ctrl-C to the group) is
``tests/runner/sweep/test_sweep_stop.py``; this one shows the stream itself: the first write
after the reader closed raises nothing, and later writes, Python's included, go nowhere.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from runner.streams import PipeSafe, survive_closed_pipes


def test_writes_to_a_pipe_whose_reader_closed_raise_nothing() -> None:
    read, write = os.pipe()
    os.close(read)  # tee is gone
    raw = io.TextIOWrapper(os.fdopen(write, "wb"), encoding="utf-8", line_buffering=True)
    with pytest.raises(BrokenPipeError):  # what a plain stream does
        raw.write("a summary\n")
    safe = PipeSafe(raw)
    assert safe.write("stopped by SIGINT\n") == len("stopped by SIGINT\n")
    safe.flush()
    assert os.readlink(f"/proc/self/fd/{raw.fileno()}") == os.devnull  # the rest goes nowhere
    raw.write("more\n")  # the plain stream's own writes succeed now too
    raw.close()


def test_a_process_whose_stdout_closed_exits_as_it_would_have() -> None:
    """Printing after the reader left: exit 0 and no 'BrokenPipeError' on stderr."""
    code = (
        "import sys, time; from runner.streams import survive_closed_pipes; "
        "survive_closed_pipes(); time.sleep(0.5); print('x' * 100000); print('done')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "BrokenPipeError" not in err and "Exception ignored" not in err, err


def test_a_stream_without_a_descriptor_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stdout", captured)
    survive_closed_pipes()
    assert sys.stdout is captured
