"""``estimate=true``: read what the job would read, count, print; no run, no model call.

The preflight's checks that an estimate needs run as the job runs them (the chunk against a
window known without litellm, the documents read through the configured loader); those it
does not need are skipped (``SKIPPED``), so a researcher can estimate before they have a key.
A cell whose identical run (same fingerprint) is FINISHED in the experiment costs nothing:
a sweep skips it, a single job's calls are answered by the response cache.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.api.errors import DataError
from runner.api.types import WorkItem
from runner.config.chunk_window import check_known_window
from runner.config.fingerprint import fingerprint, prompt_files
from runner.config.run_config import RunConfig
from runner.data.sources import for_strategy, read_items
from runner.estimate.cell import CellEstimate
from runner.estimate.ranges import ranged
from runner.estimate.report import table
from runner.tracking.sqlite_peek import done_cell

_READ: dict[str, tuple[WorkItem, ...]] = {}
"""Data config (as JSON) -> its items."""
SKIPPED = "API keys and servers (an estimate calls no model), the store's write access"
"""The preflight checks (``runner/run/preflight.py``) an estimate does not run."""


def wanted(config: RunConfig) -> bool:
    """Whether the config asks for an estimate (``estimate=true``)."""
    return bool(config.resolved.get("estimate"))


def documents(config: RunConfig) -> list[WorkItem]:
    """The job's documents, after the chunk check the preflight makes without litellm."""
    check_known_window(config)
    data = config.data
    key = json.dumps([data.source, data.values(), data.limit], sort_keys=True, default=str)
    if key not in _READ:  # a sweep's cells share their documents: read once per process
        _READ[key] = tuple(read_items(data.source, data.values(), data.limit))
    items = tuple(for_strategy(list(_READ[key]), data.source, config.strategy))
    if not items:
        raise DataError("no documents to summarize; choose data=sample or data=dir data.path=...")
    return list(items)


def done_run(config: RunConfig, parent: str | None = None) -> str | None:
    """The FINISHED run with this cell's fingerprint, when its calls would cost nothing.

    Looked up in the sweep ``parent``, or anywhere in the experiment: a resumed sweep skips
    it, and the response cache answers a rerun. None when there is none, or the cache is off.
    """
    if config.force or (parent is None and config.cache_dir is None):
        return None
    if not _sqlite_store(config.tracking_uri):
        return None  # no store yet (asking MLflow would create one), or not sqlite: not looked up
    mark = fingerprint(config, prompt_files(config))
    return done_cell(config.tracking_uri, config.experiment, parent, mark)


def _sqlite_store(uri: str) -> bool:
    """Whether ``uri`` is a sqlite store that exists (read with sqlite3, in milliseconds)."""
    path = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None
    return path is not None and path.is_file()


def estimate(config: RunConfig, name: str, items: list[WorkItem] | None = None) -> CellEstimate:
    """One cell's estimate with its ranges (``ranges.py``); a done cell is listed at no cost."""
    found = done_run(config)
    if found:
        return CellEstimate(name, 0, (), 0.0, done_run=found)
    return ranged(config, items if items is not None else documents(config), name)


def estimate_job(config: RunConfig, name: str) -> None:
    """``python -m runner ... estimate=true``: print the estimate of this one job."""
    print(table([estimate(config, name)], SKIPPED))


def estimate_sweep(
    cells: list[tuple[str, RunConfig | None, str | None]], parallel: int = 1
) -> None:
    """``-m ... estimate=true``: print every cell's estimate and the total.

    ``cells``: (name, config, run id) per cell; the run id of a cell the sweep already has
    FINISHED (then the config may be None), else None.
    """
    out = []
    for name, config, run_id in cells:
        if run_id or config is None:
            out.append(CellEstimate(name, 0, (), 0.0, done_run=run_id or "?"))
        else:
            out.append(estimate(config, name))
    print(table(out, SKIPPED, parallel))
