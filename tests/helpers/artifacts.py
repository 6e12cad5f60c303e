"""A run's artifact read back, leaving nothing behind.

Given no destination, MLflow's ``download_artifacts`` makes a new temporary folder that
nobody removes: one left in TMPDIR per read, hundreds per test session.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any


def artifact_bytes(client: Any, run_id: str, path: str) -> bytes:
    """The artifact's bytes, downloaded into a folder removed after."""
    with tempfile.TemporaryDirectory(prefix="artifact-") as tmp:
        return Path(client.download_artifacts(run_id, path, tmp)).read_bytes()


def artifact(client: Any, run_id: str, path: str) -> str:
    """The artifact's text (UTF-8)."""
    return artifact_bytes(client, run_id, path).decode("utf-8")
