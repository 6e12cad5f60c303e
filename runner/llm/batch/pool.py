"""A sweep's jobs submit their batches together: fewer, larger batches.

Each job of a sweep gathers its own requests (``collector.py``). Before submitting, a job in
a sweep leaves them in the ledger's spool (``<cache dir>/batches/spool/<endpoint>/``, one file
per offer) and waits ``batch_gather`` seconds more. Then, under the ledger's lock, the first
job whose offer is still there takes every offer of the endpoint and submits them as one batch
(split only at the provider's limits); a job whose offer was taken finds its requests in the
ledger, held by that batch, and waits for it like any batch it did not submit. Each job still
pays for the answers it uses. A job that took offers and died before submitting leaves their
requests unheld: their own jobs submit them themselves.

The jobs of a sweep start together but reach their first requests seconds apart (imports,
data, a strategy's own calls). So each job also leaves a presence file when it starts
(``arrive``), removed when it makes its first offer or ends; a job about to submit waits
for the others present, up to ``MAX_WAIT_S``, which is little against a batch's hour.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import uuid
from pathlib import Path

from runner.llm.batch.ledger import Ledger
from runner.llm.batch.protocol import BatchRequest
from runner.llm.request import Request

MAX_WAIT_S = 60.0
"""The longest a job waits for the other jobs present to offer their first requests."""


class SweepPool:
    """The spool of one endpoint's requests offered by a sweep's jobs."""

    def __init__(self, ledger: Ledger, endpoint: tuple[str, str]) -> None:
        """The spool of ``endpoint`` (model string, server) in ``ledger``'s folder."""
        digest = hashlib.sha256("\0".join(endpoint).encode()).hexdigest()[:16]
        self.folder = ledger.folder / "spool" / digest

    def arrive(self) -> Path:
        """Say this job will offer requests soon; the file is removed by ``leave``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"present-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        path.touch()
        return path

    @staticmethod
    def leave(presence: Path | None) -> None:
        """This job has offered, or ends: others need not wait for it."""
        if presence is not None:
            presence.unlink(missing_ok=True)

    def others_coming(self) -> bool:
        """True while another live job of the sweep has not made its first offer."""
        for path in self.folder.glob("present-*"):
            try:
                pid = int(path.name.split("-")[1])
                os.kill(pid, 0)  # a killed job's file is stale, not a job still coming
            except (ValueError, IndexError, ProcessLookupError):
                continue
            except PermissionError:
                return True
            return True
        return False

    def offer(self, items: list[BatchRequest]) -> Path:
        """Leave ``items`` for whichever job submits next; the offer's file is its ticket."""
        self.folder.mkdir(parents=True, exist_ok=True)
        rows = [{"key": i.custom_id, "request": dataclasses.asdict(i.request)} for i in items]
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(rows, handle)
        ticket = Path(tmp).with_suffix(".json")
        os.replace(tmp, ticket)
        return ticket

    def take(self, ticket: Path) -> list[BatchRequest] | None:
        """Every offer on the spool, removed from it (call under the ledger's lock).

        None when ``ticket`` is gone: another job took this offer and submitted it.
        """
        if not ticket.exists():
            return None
        found: dict[str, BatchRequest] = {}
        for path in sorted(self.folder.glob("*.json"), key=_mtime):
            try:
                rows = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            path.unlink(missing_ok=True)
            for row in rows:
                found.setdefault(row["key"], BatchRequest(row["key"], Request(**row["request"])))
        return list(found.values())


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
