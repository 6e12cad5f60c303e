"""The status a sweep's parent run ends with: a summary of its children's.

A parent marked FINISHED over failed children told the UI, and a report choosing "the latest
sweep", that the sweep had worked. So the parent ends FINISHED only when every cell it ran has
a FINISHED run; otherwise FAILED, its ``failure`` tag saying how many jobs failed and naming
the first, and ``runner.children`` counting the children by status. A cell counts by its
newest run (a resumed sweep supersedes a killed or failed run of the same fingerprint).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from runner.tracking.tags import CHILDREN_TAG, FINGERPRINT_TAG


def newest_per_cell(runs: Sequence[Any]) -> list[Any]:
    """The newest run of each fingerprint (MLflow ``Run`` objects, newest first on input)."""
    newest: dict[str, Any] = {}
    for run in runs:
        tags = run.data.tags
        key = tags.get(FINGERPRINT_TAG) or run.info.run_id
        newest.setdefault(key, run)
    return list(newest.values())


def finish_parent(uri: str, run_id: str, failed_jobs: Sequence[str], experiment: str) -> str:
    """End the parent ``run_id`` with the status its children earn; print where to look next.

    ``failed_jobs``: the errors of this sweep's jobs that failed, some before creating a run
    (they left no child to count). Returns the status set.
    """
    from runner.tracking.reader import run_filter
    from runner.tracking.writer import Tracker

    tracker = Tracker.for_run(uri, run_id)
    found = tracker.client.search_runs(
        [tracker.experiment_id],
        run_filter(sweep=run_id),
        max_results=10000,
        order_by=["attributes.start_time DESC"],
    )
    cells = newest_per_cell(found)
    statuses = [run.info.status for run in cells]
    finished = statuses.count("FINISHED")
    failed = max(len(statuses) - finished, len(failed_jobs))
    counts = {s: statuses.count(s) for s in dict.fromkeys(statuses)}
    tracker.set_tags({CHILDREN_TAG: ", ".join(f"{n} {s}" for s, n in counts.items()) or "none"})
    if failed or not finished:
        first = failed_jobs[0] if failed_jobs else _first_failure(cells)
        total = max(len(statuses), finished + failed)
        reason = f"{failed} of {total} jobs failed" if total else "no job ran"
        tracker.finish("FAILED", reason=f"{reason}; first: {first}" if first else reason)
        return "FAILED"
    tracker.finish("FINISHED")
    print(
        f"sweep: {finished} runs FINISHED under parent run {run_id}; the tables: "
        f"python -m runner.report tracking.experiment={experiment}",
        file=sys.stderr,
    )
    return "FINISHED"


def _first_failure(cells: list[Any]) -> str:
    for run in cells:
        if run.info.status != "FINISHED":
            name = run.info.run_name
            return f"{name}: {run.data.tags.get('failure', run.info.status)}"
    return ""
