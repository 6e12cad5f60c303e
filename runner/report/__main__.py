"""``python -m runner.report``: Hydra's config errors as one line (``reported``), exit 2."""

from runner.config.hydra_errors import reported
from runner.report.make import _one_line, main

if __name__ == "__main__":
    reported(main, _one_line)
