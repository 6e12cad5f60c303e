"""``python -m runner.ui``: the MLflow UI on this folder's store, offline.

Plain ``mlflow ui`` reports usage telemetry and, through the litellm it imports, retries a
price-map download three times at start-up; on a machine without internet both are waits
and warnings. Importing ``runner`` sets the defaults that turn them off
(``runner/__init__.py``); this then hands over to ``mlflow ui`` with that environment.

    python -m runner.ui                       # the store of ./mlruns (what runs started here use)
    python -m runner.ui --port 5001           # any other ``mlflow ui`` option
    python -m runner.ui --backend-store-uri sqlite:////abs/path/mlflow.db
"""

from __future__ import annotations

import os
import sys

from runner.config import default_tracking_uri


def command(args: list[str]) -> list[str]:
    """The ``mlflow ui`` command line: this folder's store unless one is given."""
    store = [] if any(a.startswith("--backend-store-uri") for a in args) else ["--backend-store-uri", default_tracking_uri()]
    return [sys.executable, "-m", "mlflow", "ui", *store, *args]


def main() -> None:
    """Replace this process with ``mlflow ui`` (the environment set by ``import runner`` carries over)."""
    argv = command(sys.argv[1:])
    os.execve(sys.executable, argv, dict(os.environ))


if __name__ == "__main__":
    main()
