"""Whether a sweep cell is done: the one rule, for the sweeper, a job and a reader of the store.

A cell is a fingerprint. It is done when its newest FINISHED run skipped no failed document
(tag ``runner.documents_failed``): such a run covers fewer documents, so the cell runs again.
FAILED, KILLED and RUNNING runs never count. The rows come from a sqlite look at the store
(``sqlite_peek``) or from MLflow (``reader.finished_rows``); the rule is applied here only.
"""

from __future__ import annotations

from collections.abc import Iterable

Row = tuple[str, str, str]
"""(fingerprint, run id, failed-documents tag or "") of a FINISHED run."""


def newest_clean(rows: Iterable[Row]) -> dict[str, str]:
    """Fingerprint -> run id of each cell whose newest FINISHED run has no failed document.

    ``rows``: the FINISHED runs, newest first.
    """
    newest: dict[str, tuple[str, str]] = {}
    for fingerprint, run_id, failed in rows:
        if fingerprint and fingerprint not in newest:
            newest[fingerprint] = (run_id, failed)
    return {f: run_id for f, (run_id, failed) in newest.items() if not failed}
