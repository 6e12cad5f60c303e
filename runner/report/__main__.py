"""``python -m runner.report``: Hydra's config errors as one line (``reported``), exit 2.

Before Hydra starts: a folder it cannot write ``reports/`` in, or no store where it looks,
is one line too (a report only reads the store; MLflow would create an empty one). The store
is ``tracking.uri=URI``, as in every command; ``--tracking-uri URI`` becomes that override.
"""

import sys

from runner.config.folders import (
    HELP_FLAGS,
    REPORT_FOLDERS,
    given,
    refuse_unwritable,
    store_override,
)
from runner.config.hydra_errors import reported
from runner.report.make import _one_line, main
from runner.tracking.store import default_tracking_uri, missing_store, unusable_server


def _refuse_missing_store(argv: list[str]) -> None:
    if any(a.partition("=")[0] in HELP_FLAGS for a in argv):
        return
    uri = given(argv).get("tracking.uri") or default_tracking_uri()
    missing = missing_store(uri) or unusable_server(uri)
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    sys.argv[1:] = store_override(sys.argv[1:])  # --tracking-uri URI: tracking.uri=URI
    refuse_unwritable(sys.argv[1:], REPORT_FOLDERS)
    _refuse_missing_store(sys.argv[1:])
    reported(main, _one_line)
