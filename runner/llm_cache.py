"""A persistent, process-safe store of model responses keyed by the whole request.

We do not use litellm's cache because its key omits provider parameters (api_base among
them). The key is the SHA-256 of the canonical JSON of everything that can change an
answer, including a ``sample`` index so repeated samples at temperature > 0 get distinct
slots. Entries are JSON files written atomically (temp file + rename), so parallel jobs
and machines sharing a folder never see half an entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_key(request: dict[str, Any]) -> str:
    """SHA-256 of the request's canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """On-disk map from request key to the stored response."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()

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
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(value, handle, ensure_ascii=False)
        os.replace(tmp, path)
