"""Every submitted batch, on disk beside the response cache, so a rerun never pays twice.

One JSON file per batch in ``<cache dir>/batches/`` (written atomically, before the job
waits): the provider, its batch id, the endpoint, the requests it holds (their cache keys),
when it was submitted, and what the runner last saw of it. The response cache is what
decides whether a request is answered, so its ledger lives with it: every job and sweep that
shares a cache shares its batches, and a request that a live batch holds is waited for, never
sent again, whichever command asks. ``locked()`` (an ``flock`` on ``.lock``) makes "which
requests are held, then submit the rest, then write the entry" one step across processes.
``python -m runner.batches`` lists and cancels what the ledger holds.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FOLDER = "batches"
"""The ledger's folder inside the response cache's."""


@dataclass
class BatchEntry:
    """One submitted batch, as the ledger keeps it."""

    provider: str
    """'anthropic' or 'openai'."""
    batch_id: str
    """The provider's id ('msgbatch_...', 'batch_...')."""
    model: str
    """The litellm model string the requests name."""
    api_base: str | None
    """The server (None: the provider's own)."""
    alias: str
    """The config alias (claude, gpt4, ...), for listings."""
    role: str
    """The role that submitted it (judge, evaluator, model)."""
    requests: list[str]
    """The cache keys it holds (each the request's ``custom_id``)."""
    submitted_at: float
    """Unix time of submission."""
    api_key_env: str | None = None
    """The variable holding the key (its name only: ``runner.batches`` reads the key from it)."""
    status: str = "submitted"
    """The provider's word the last time it was looked at."""
    done: int = 0
    """Requests answered, last seen."""
    failed: int = 0
    """Requests failed, last seen."""
    ended: bool = False
    """The provider said no more answers will come."""
    collected: bool = False
    """Its answers are in the cache, its failures resubmitted or given up: nothing to wait for."""
    updated_at: float = 0.0
    """Unix time of the last look."""
    run: str = ""
    """The MLflow run that was waiting on it, when known."""

    @property
    def live(self) -> bool:
        """True while the batch may still bring answers the runner has not collected."""
        return not self.collected

    @property
    def endpoint(self) -> tuple[str, str]:
        """The model string and server, as ``ModelSpec.endpoint``."""
        return (self.model, self.api_base or "")

    def age_s(self, now: float | None = None) -> float:
        """Seconds since submission."""
        return (now if now is not None else time.time()) - self.submitted_at


class Ledger:
    """The batch files of one response cache."""

    def __init__(self, cache_dir: str | Path) -> None:
        """The ledger of the cache in ``cache_dir`` (its folder made on first write)."""
        self.folder = Path(cache_dir).expanduser() / FOLDER

    def _path(self, provider: str, batch_id: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", batch_id)
        return self.folder / f"{provider}--{safe}.json"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the ledger's lock: no other process claims or submits requests meanwhile."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "a+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def write(self, entry: BatchEntry) -> None:
        """Store ``entry`` atomically (a reader never sees half a file)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(entry.provider, entry.batch_id)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(asdict(entry), handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def entries(self) -> list[BatchEntry]:
        """Every batch on record, oldest first (an unreadable file is skipped)."""
        out = []
        for path in sorted(self.folder.glob("*--*.json")) if self.folder.is_dir() else ():
            entry = _read(path)
            if entry is not None:
                out.append(entry)
        return sorted(out, key=lambda e: e.submitted_at)

    def live(self) -> list[BatchEntry]:
        """The batches not collected yet."""
        return [e for e in self.entries() if e.live]

    def find(self, batch_id: str) -> BatchEntry | None:
        """The entry of ``batch_id`` (any provider), or None."""
        return next((e for e in self.entries() if e.batch_id == batch_id), None)

    def holding(self, keys: Iterable[str], endpoint: tuple[str, str]) -> dict[str, BatchEntry]:
        """Key -> the live batch of ``endpoint`` that holds it, for the keys one holds."""
        wanted = set(keys)
        out: dict[str, BatchEntry] = {}
        for entry in self.live():
            if entry.endpoint != endpoint:
                continue
            for key in wanted.intersection(entry.requests):
                out[key] = entry
        return out

    def last_batch_of(self, keys: Iterable[str], endpoint: tuple[str, str]) -> dict[str, str]:
        """Key -> the id of the newest batch of ``endpoint`` that held it, for keys one held."""
        wanted = set(keys)
        out: dict[str, str] = {}
        for entry in self.entries():  # oldest first: a newer batch overwrites
            if entry.endpoint == endpoint:
                for key in wanted.intersection(entry.requests):
                    out[key] = entry.batch_id
        return out

    def attempts(self, keys: Iterable[str], endpoint: tuple[str, str]) -> dict[str, int]:
        """How many batches of ``endpoint`` have held each of ``keys`` (0: never submitted).

        One read of the ledger for all the keys: a batch holds up to 100,000 of them.
        """
        counts = dict.fromkeys(keys, 0)
        for entry in self.entries():
            if entry.endpoint != endpoint:
                continue
            for key in counts.keys() & set(entry.requests):
                counts[key] += 1
        return counts


def _read(path: Path) -> BatchEntry | None:
    try:
        raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        known = set(BatchEntry.__dataclass_fields__)
        return BatchEntry(**{k: v for k, v in raw.items() if k in known})
    except (OSError, ValueError, TypeError):
        return None
