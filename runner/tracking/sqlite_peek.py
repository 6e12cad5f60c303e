"""A read-only look at an MLflow sqlite store without importing MLflow (~2 s): the sweep's
parent run and its finished cells, so that resuming a sweep whose cells are all done costs
milliseconds (``runner/sweep/callback.py``). It reads MLflow's tables ``experiments``, ``runs`` and
``tags`` only; a store that is not a sqlite file, or that cannot be read so, is asked
through MLflow (``runner/tracking/writer.py``), which stays the one door for every write.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

FAILED_DOCUMENTS_TAG = "runner.documents_failed"
"""``runner.tracking.reader.FAILED_DOCUMENTS_TAG`` (that module imports MLflow); a test keeps them equal.
A finished run carrying it skipped failed documents, so its cell runs again."""


def _sqlite_file(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` store that exists, else None."""
    if not uri.startswith("sqlite:///") or "?" in uri:
        return None
    path = Path(uri[len("sqlite:///") :])
    return path if path.is_file() and path.stat().st_size > 0 else None


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        yield connection
    finally:
        connection.close()


def _experiment_id(db: sqlite3.Connection, experiment: str) -> str | None:
    """The id of the one active experiment of that name; KeyError when that is not plain."""
    rows = db.execute(
        "SELECT experiment_id, lifecycle_stage FROM experiments WHERE name = ?", (experiment,)
    ).fetchall()
    if not rows:
        return None
    if len(rows) > 1 or rows[0][1] != "active":
        raise KeyError(experiment)  # a deleted experiment, or one per workspace: ask MLflow
    return str(rows[0][0])


def sweep_parent(uri: str, experiment: str, key: str) -> tuple[str, str] | None:
    """(run id, status) of the newest active parent run of the sweep ``key``, read straight
    from a sqlite store (MLflow's tables ``experiments``, ``runs``, ``tags``); None when there
    is none, or the store is not a sqlite file or cannot be read that way.
    """
    path = _sqlite_file(uri)
    if path is None:
        return None
    try:
        with _read_only(path) as db:
            experiment_id = _experiment_id(db, experiment)
            row = db.execute(
                "SELECT r.run_uuid, r.status FROM runs r"
                " JOIN tags k ON k.run_uuid = r.run_uuid AND k.key = 'runner.kind' AND k.value = 'sweep'"
                " JOIN tags s ON s.run_uuid = r.run_uuid AND s.key = 'runner.sweep_key' AND s.value = ?"
                " WHERE r.experiment_id = ? AND r.lifecycle_stage = 'active'"
                " ORDER BY r.start_time DESC LIMIT 1",
                (key, experiment_id),
            ).fetchone()
    except (sqlite3.Error, KeyError):
        return None
    return (str(row[0]), str(row[1])) if row else None


def finished_cells(uri: str, experiment: str, parent: str) -> dict[str, str]:
    """Fingerprint -> run id of the cells of sweep ``parent`` that are done: the newest active
    run of each fingerprint is FINISHED and skipped no failed document (as
    ``runner.run.lifecycle._finished_cell`` decides for one cell). One query of the store.
    """
    path = _sqlite_file(uri)
    if path is not None:
        try:
            with _read_only(path) as db:
                experiment_id = _experiment_id(db, experiment)
                rows = (
                    []
                    if experiment_id is None
                    else db.execute(
                        "SELECT f.value, r.run_uuid, COALESCE(x.value, '') FROM runs r"
                        " JOIN tags p ON p.run_uuid = r.run_uuid AND p.key = 'mlflow.parentRunId' AND p.value = ?"
                        " JOIN tags f ON f.run_uuid = r.run_uuid AND f.key = 'fingerprint'"
                        " LEFT JOIN tags x ON x.run_uuid = r.run_uuid AND x.key = ?"
                        " WHERE r.experiment_id = ? AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active'"
                        " ORDER BY r.start_time DESC",
                        (parent, FAILED_DOCUMENTS_TAG, experiment_id),
                    ).fetchall()
                )
            return _newest_clean((str(f), str(r), str(x)) for f, r, x in rows)
        except (sqlite3.Error, KeyError):
            pass  # ask MLflow
    from runner.tracking.writer import Tracker, artifact_root

    tracker = Tracker(uri, experiment, artifact_root(uri))
    runs = tracker.client.search_runs(
        [tracker.experiment_id],
        f"tags.`mlflow.parentRunId` = '{parent}' and attributes.status = 'FINISHED'",
        max_results=50000,
        order_by=["attributes.start_time DESC"],
    )
    return _newest_clean(
        (
            r.data.tags.get("fingerprint", ""),
            r.info.run_id,
            r.data.tags.get(FAILED_DOCUMENTS_TAG, ""),
        )
        for r in runs
    )


def _newest_clean(rows: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """(fingerprint, run id, failed-documents tag), newest first -> the fingerprints whose
    newest run has no failed document.
    """
    newest: dict[str, tuple[str, str]] = {}
    for fingerprint, run_id, failed in rows:
        if fingerprint and fingerprint not in newest:
            newest[fingerprint] = (run_id, failed)
    return {f: run_id for f, (run_id, failed) in newest.items() if not failed}
