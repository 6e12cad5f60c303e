"""The status a sweep's parent run ends with: a summary of its children's.

A parent marked FINISHED over failed children told the UI, and a report choosing "the latest
sweep", that the sweep had worked. So the parent ends FINISHED only when every cell it ran has
a FINISHED run; otherwise FAILED, its ``failure`` tag saying how many jobs failed and naming
the first, and ``runner.children`` counting the children by status. A cell counts by its
newest run (a resumed sweep supersedes a killed or failed run of the same fingerprint).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from runner.tracking.tags import CHILDREN_TAG, FINGERPRINT_TAG, HEADLINE_TAG


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
    show_children(tracker, found)
    if failed or not finished:
        first = failed_jobs[0] if failed_jobs else _first_failure(cells)
        total = max(len(statuses), finished + failed)
        reason = f"{failed} of {total} jobs failed" if total else "no job ran"
        tracker.finish("FAILED", reason=f"{reason}; first: {first}" if first else reason)
        _print_link(uri, tracker.experiment_id, run_id)
        return "FAILED"
    tracker.finish("FINISHED")
    print(
        f"sweep: {finished} runs FINISHED under parent run {run_id}; the tables: "
        f"{report_command(uri, experiment)}",
        file=sys.stderr,
    )
    _print_link(uri, tracker.experiment_id, run_id)
    return "FINISHED"


def report_command(uri: str, experiment: str) -> str:
    """The report's command for this sweep's store and experiment, as the user pastes it.

    A store other than this folder's default is named (a pasted command without it would
    report from ``./mlruns``, another store); its credentials never are (``shown``).
    """
    from runner.tracking.store import default_tracking_uri, shown

    words = ["python", "-m", "runner.report", f"tracking.experiment={experiment}"]
    if uri != default_tracking_uri():
        words.append(f"tracking.uri={shown(uri)}")
    return shlex.join(words)


def show_children(tracker: Any, children: Sequence[Any]) -> None:
    """The sweep's runs-table view, once every job is known (``Tracker.show_sweep``).

    Columns: the jobs' headline values and cost, the settings they have, the swept keys.

    A convenience, as a job's own view: a failure is a warning, the status is set regardless.
    """
    from runner.tracking.runs_view import shown_params

    metrics: dict[str, None] = {}
    settings: set[str] = set()  # a job's roles are params of their own (model, judge)
    for run in reversed(children):  # oldest first: the first job's columns lead
        try:
            metrics.update(dict.fromkeys(json.loads(run.data.tags.get(HEADLINE_TAG) or "[]")))
        except ValueError:
            continue
        settings.update(run.data.params)
    try:
        keys = tracker.client.get_run(tracker.run_id).data.params.get("sweep.keys", "")
        swept = [k for k in keys.split(",") if k]
        params = shown_params(settings, swept)
        tracker.show_sweep(tracker.run_id, [*metrics, "cost_usd"], params, swept=swept)
    except Exception as err:  # noqa: BLE001 - the sweep's results are stored; this is a view
        print(f"warning: could not set the sweep's runs-table view: {err}", file=sys.stderr)


def _print_link(uri: str, experiment_id: str, run_id: str) -> None:
    from runner.ui import sweep_lines

    print("\n".join(sweep_lines(uri, experiment_id, run_id)), file=sys.stderr)


def _first_failure(cells: list[Any]) -> str:
    for run in cells:
        if run.info.status != "FINISHED":
            name = run.info.run_name
            return f"{name}: {run.data.tags.get('failure', run.info.status)}"
    return ""
