"""Feedback while a job works: documents done, model calls, tokens and cost so far.

tqdm writes to stderr and is disabled when stderr is not a terminal, so logs and CI
stay quiet; the final one-screen summary is printed by the entry point either way.
"""

from __future__ import annotations

import threading

from tqdm import tqdm

from runner.call_log import CallTotals


class Progress:
    """A document bar whose postfix follows the gateway's call totals."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.bar = tqdm(total=None, desc=label, unit="doc", disable=not enabled, leave=True)
        self._lock = threading.Lock()

    def set_total(self, total_docs: int) -> None:
        """The number of documents, known once they are loaded."""
        with self._lock:
            self.bar.total = total_docs
            self.bar.refresh()

    def on_call(self, totals: CallTotals) -> None:
        """Called by the CallLog after every model call."""
        with self._lock:
            self.bar.set_postfix_str(
                f"calls={totals.calls} cached={totals.cache_hits} "
                f"tok={totals.prompt_tokens + totals.completion_tokens} ${totals.cost_usd:.4f}",
                refresh=True,
            )

    def doc_done(self) -> None:
        """One more document summarized and scored."""
        with self._lock:
            self.bar.update(1)

    def close(self) -> None:
        """Leave the bar's last state on screen."""
        self.bar.close()
