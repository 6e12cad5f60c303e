"""Whether this process runs on a Ray cluster: the one place the runner asks.

Ray is never imported here (costly, and an optional extra): a process runs on Ray when its
launcher already imported and initialized it (``hydra/launcher=ray``). The rate limits'
and the sweep budget's actors (``runner.llm.rate_ray``) and the stale-run check's dead
nodes (``runner.tracking.owners``) use it.
"""

from __future__ import annotations

import sys
from typing import Any


def running_ray() -> Any | None:
    """The ``ray`` module when this process already runs on it, else None."""
    ray = sys.modules.get("ray")
    if ray is None or not getattr(ray, "is_initialized", lambda: False)():
        return None
    return ray
