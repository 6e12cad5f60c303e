"""A persistent, process-safe store of model responses keyed by the whole request.

We do not use litellm's cache because its key omits provider parameters (api_base among
them). The key is the SHA-256 of the canonical JSON of everything that can change an
answer, including a ``sample`` index so repeated samples at temperature > 0 get distinct
slots. Entries are JSON files written atomically (temp file + rename), so parallel jobs
and machines sharing a folder never see half an entry. A writer killed between the two
leaves only its temp file (``tmp*.tmp``), which no reader opens (they read ``<key>.json``);
``put`` removes such leftovers once they are an hour old, never a temp file being written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STALE_TMP_S = 3600.0
"""Age after which a temp file is a dead writer's: a live one renames it within milliseconds
(an hour also covers clocks that differ between machines sharing the folder)."""


def cache_key(request: dict[str, Any]) -> str:
    """SHA-256 of the request's canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """On-disk map from request key to the stored response."""

    def __init__(self, folder: str | Path) -> None:
        """A cache in ``folder`` (its subfolders are made by the first write to each)."""
        self.folder = Path(folder).expanduser()
        self._tidied: set[Path] = set()
        self._lock = threading.Lock()
        self._asking: dict[str, threading.Event] = {}

    @contextlib.contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """Hold ``key`` while its request is asked; another claim of it waits meanwhile.

        A thread of this process claiming it waits until the first is done, then finds its
        answer here instead of paying for the same call again (a strategy's threads may send
        identical requests at once: two chunks with the same text). If the first fails, the
        next one asks.
        """
        while True:
            with self._lock:
                asking = self._asking.get(key)
                if asking is None:
                    mine = self._asking[key] = threading.Event()
                    break
            asking.wait()
        try:
            yield
        finally:
            with self._lock:
                del self._asking[key]
            mine.set()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response, or None when absent or unreadable."""
        try:
            return dict(json.loads(self._path(key).read_text(encoding="utf-8")))
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` atomically under ``key``."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(value, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._tidy(path.parent)

    def _tidy(self, folder: Path) -> None:
        """Once per folder and process, remove temp files that killed writers left behind."""
        if folder in self._tidied:
            return
        self._tidied.add(folder)
        cutoff = time.time() - STALE_TMP_S
        for tmp in folder.glob("*.tmp"):
            try:
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink()
            except OSError:
                continue  # another process removed or renamed it first
