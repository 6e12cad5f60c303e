"""Feedback while a job works: documents done, the current step, calls, tokens, cost, ETA.

Three modes (``progress=`` in config): ``bar`` redraws one tqdm line on stderr (the default
on a terminal); ``lines`` prints one line per finished document (the default when stderr
is a log file or a pipe, where a redrawn bar is noise and silence looks like a hang);
``off`` prints nothing. The end-of-run summary is printed by the entry point either way.

In a sweep, several jobs can write to one terminal at once (``hydra/launcher=joblib``):
each line then names its cell, the overrides that make the job's run name
(``hier [strategy=hier,chunk=1024] [2/3] ...``). A single job's lines name only its strategy.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from tqdm import tqdm

from runner.config.run_config import PROGRESS_MODES
from runner.llm.call_log import CallTotals


class Progress:
    """Follows the gateway's calls (``on_call``) and the documents (``doc_done``)."""

    def __init__(self, mode: str, label: str, cell: str = "") -> None:
        """Follow calls in ``mode`` (one of ``PROGRESS_MODES``), naming the job ``label``.

        ``cell``: the sweep cell's run name ('strategy=hier,chunk=1024'), '' for a single job;
        given, every line and the bar carry it, so parallel jobs' lines tell apart.
        """
        self.mode = mode
        if mode not in PROGRESS_MODES:
            raise ValueError(f"progress mode {mode!r}; expected one of {PROGRESS_MODES}")
        self.label = f"{label} [{cell}]" if cell else label
        self.bar = tqdm(
            total=None, desc=self.label, unit="doc", disable=self.mode != "bar", leave=True
        )
        self._lock = threading.Lock()
        self._start = time.perf_counter()
        self._total: int | None = None
        self._done = 0
        self._step = ""
        self._totals = CallTotals()

    def set_total(self, total_docs: int) -> None:
        """The number of documents, known once they are loaded."""
        with self._lock:
            self._total = total_docs
            self.bar.total = total_docs
            self.bar.refresh()

    def on_call(self, totals: CallTotals, line: dict[str, Any] | None = None) -> None:
        """Called by the CallLog after every model call, with that call's log line."""
        with self._lock:
            self._totals = totals
            if line is not None:
                self._step = step_of(line)
            self.bar.set_postfix_str(self._postfix(), refresh=True)

    def doc_done(self, doc_id: str = "") -> None:
        """One more document summarized and scored (or failed, under on_error=continue)."""
        with self._lock:
            self._done += 1
            self.bar.update(1)
            if self.mode == "lines":
                print(self._line(doc_id), file=sys.stderr, flush=True)

    def close(self) -> None:
        """Leave the bar's last state on screen."""
        self.bar.close()

    def _postfix(self) -> str:
        t = self._totals
        step = f"{self._step} | " if self._step else ""
        return (
            f"{step}calls={t.calls} cached={t.cache_hits} "
            f"tok={t.prompt_tokens + t.completion_tokens} ${t.cost_usd:.4f}"
        )

    def _line(self, doc_id: str) -> str:
        """'[2/3] doc-id done: 41 s elapsed, ETA 20 s | calls=..., tokens, $'."""
        elapsed = time.perf_counter() - self._start
        total = f"/{self._total}" if self._total else ""
        eta = ""
        if self._total and self._done < self._total:
            eta = f", ETA {elapsed / self._done * (self._total - self._done):.0f} s"
        t = self._totals
        return (
            f"{self.label} [{self._done}{total}] {doc_id} done: {elapsed:.0f} s elapsed{eta} | "
            f"calls={t.calls} cached={t.cache_hits} tok={t.prompt_tokens + t.completion_tokens} "
            f"${t.cost_usd:.4f}"
        )


def step_of(line: dict[str, Any]) -> str:
    """What the last call was for: 'the-story: hier/merge' (document, then the call's purpose)."""
    purpose = str(line.get("purpose") or line.get("role") or "")
    document = line.get("document")
    return f"{str(document)[:24]}: {purpose}" if document else purpose
