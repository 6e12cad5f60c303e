"""Whether a cell is done, and a read-only look at an MLflow sqlite store without MLflow.

``done_cells`` answers for the sweeper and for a job, by the rule of ``runner.tracking.done``.
The look does without importing MLflow to find the sweep's parent run and its done cells, so
that resuming a sweep whose cells are all done is quick. It reads MLflow's tables
``experiments``, ``runs`` and ``tags`` only; a store that is not a sqlite file, or that cannot
be read so, is asked through MLflow (``runner/tracking/reader.py``), and
``runner/tracking/writer.py`` stays the one door for every write.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from runner.tracking.done import Row, newest_clean
from runner.tracking.tags import (
    FAILED_DOCUMENTS_TAG,
    FINGERPRINT_TAG,
    PARENT_TAG,
    RUN_KIND_TAG,
    SWEEP_KEY_TAG,
    SWEEP_KIND,
)


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
    """(run id, status) of the newest active parent run of the sweep ``key``.

    Read straight from a sqlite store (MLflow's tables ``experiments``, ``runs``, ``tags``);
    None when there is none, or the store is not a sqlite file or cannot be read that way.
    """
    path = _sqlite_file(uri)
    if path is None:
        return None
    try:
        with _read_only(path) as db:
            experiment_id = _experiment_id(db, experiment)
            row = db.execute(
                "SELECT r.run_uuid, r.status FROM runs r"
                " JOIN tags k ON k.run_uuid = r.run_uuid AND k.key = ? AND k.value = ?"
                " JOIN tags s ON s.run_uuid = r.run_uuid AND s.key = ? AND s.value = ?"
                " WHERE r.experiment_id = ? AND r.lifecycle_stage = 'active'"
                " ORDER BY r.start_time DESC LIMIT 1",
                (RUN_KIND_TAG, SWEEP_KIND, SWEEP_KEY_TAG, key, experiment_id),
            ).fetchone()
    except (sqlite3.Error, KeyError):
        return None
    return (str(row[0]), str(row[1])) if row else None


def done_cells(
    uri: str, experiment: str, parent: str | None, fingerprint: str | None = None
) -> dict[str, str]:
    """Fingerprint -> run id of the cells that are done: the one rule for "is this cell done?".

    A cell (a fingerprint within the sweep ``parent``; anywhere in the experiment when
    ``parent`` is None) is done when its newest active FINISHED run skipped no failed document
    (tag ``runner.documents_failed``): such a run covers fewer documents, so the cell runs
    again. ``fingerprint`` narrows the answer to one cell. The sweeper asks once for a whole
    sweep, a job for its own cell (``done_cell``); a sqlite store is read with sqlite3 (one
    query, no MLflow import), any other through MLflow, with the same rule.
    """
    rows = _sqlite_rows(uri, experiment, parent, fingerprint)
    if rows is None:
        rows = _mlflow_rows(uri, experiment, parent, fingerprint)
    return newest_clean(rows)


def done_cell(uri: str, experiment: str, parent: str | None, fingerprint: str) -> str | None:
    """The run id that makes the cell ``fingerprint`` done (``done_cells``' rule), else None."""
    return done_cells(uri, experiment, parent, fingerprint).get(fingerprint)


def _sqlite_rows(
    uri: str, experiment: str, parent: str | None, fingerprint: str | None
) -> list[Row] | None:
    """The FINISHED runs of the cells, newest first, read with sqlite3.

    None when the store is not a sqlite file or cannot be read so (then MLflow answers).
    """
    path = _sqlite_file(uri)
    if path is None:
        return None
    query = (
        "SELECT f.value, r.run_uuid, COALESCE(x.value, '') FROM runs r"
        " JOIN tags f ON f.run_uuid = r.run_uuid AND f.key = ?"
        " LEFT JOIN tags x ON x.run_uuid = r.run_uuid AND x.key = ?"
        " WHERE r.experiment_id = ? AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active'"
    )
    try:
        with _read_only(path) as db:
            experiment_id = _experiment_id(db, experiment)
            if experiment_id is None:
                return []
            values: list[str] = [FINGERPRINT_TAG, FAILED_DOCUMENTS_TAG, experiment_id]
            if parent is not None:
                query += (
                    " AND EXISTS (SELECT 1 FROM tags p WHERE p.run_uuid = r.run_uuid"
                    " AND p.key = ? AND p.value = ?)"
                )
                values += [PARENT_TAG, parent]
            if fingerprint is not None:
                query += " AND f.value = ?"
                values.append(fingerprint)
            # MLflow's own tie-breaker on equal start times is the run id, ascending
            query += " ORDER BY r.start_time DESC, r.run_uuid"
            rows = db.execute(query, values).fetchall()
    except (sqlite3.Error, KeyError):
        return None
    return [(str(f), str(r), str(x)) for f, r, x in rows]


def _mlflow_rows(
    uri: str, experiment: str, parent: str | None, fingerprint: str | None
) -> list[Row]:
    """The FINISHED runs of the cells, newest first, through MLflow (``reader.finished_rows``)."""
    from runner.tracking.reader import finished_rows

    return finished_rows(uri, experiment, sweep=parent, fingerprint=fingerprint)


def model_run_folders(uri: str, model: str, limit: int) -> list[tuple[Path, float]]:
    """(artifact folder, seconds from start to end) of the newest finished runs of ``model``.

    ``model`` is a litellm model string, matched against any role's ``<role>.model`` param.
    Empty for a store that is not sqlite (the estimate then uses its defaults).
    """
    path = _sqlite_file(uri)
    if path is None:
        return []
    query = (
        "SELECT DISTINCT r.run_uuid, r.artifact_uri, r.start_time, r.end_time FROM runs r"
        " JOIN params p ON p.run_uuid = r.run_uuid AND p.key LIKE '%.model' AND p.value = ?"
        " WHERE r.status = 'FINISHED' AND r.lifecycle_stage = 'active'"
        " ORDER BY r.start_time DESC LIMIT ?"
    )
    try:
        with _read_only(path) as db:
            rows = db.execute(query, (model, limit)).fetchall()
    except sqlite3.Error:
        return []
    folders = []
    for _, artifact_uri, start, end in rows:
        text = str(artifact_uri or "")
        local = unquote(urlparse(text).path) if text.startswith("file://") else text
        if local.startswith("/") and start and end:
            folders.append((Path(local), (float(end) - float(start)) / 1000.0))
    return folders
