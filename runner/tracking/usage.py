"""A run's ``usage.json`` read back: the bookkeeping counters that are not MLflow metrics.

``runner.run.usage`` decides which values stay metrics and writes the rest here; readers (the
viewer, benchmarks, tests) read them back without importing the run package.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

USAGE_FILE = "usage.json"
"""The table artifact of a run's bookkeeping counters (name, value)."""


def read_usage(client: Any, run_id: str) -> dict[str, float]:
    """A run's ``usage.json`` as {name: value} (NaN where the table has null).

    {} when the run has none: runs logged before it existed kept these values as metrics.
    """
    if not any(a.path == USAGE_FILE for a in client.list_artifacts(run_id)):
        return {}
    # Into a folder of our own: without one, MLflow downloads into a new temporary folder that
    # nobody removes (one left in /tmp per run read).
    with tempfile.TemporaryDirectory(prefix="usage-") as tmp:
        local = Path(client.download_artifacts(run_id, USAGE_FILE, tmp))
        table = json.loads(local.read_text(encoding="utf-8"))
    name, value = table["columns"].index("name"), table["columns"].index("value")
    return {
        row[name]: math.nan if row[value] is None else float(row[value]) for row in table["data"]
    }
