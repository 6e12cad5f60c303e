"""``python -m runner.report``."""

from runner.config import hydra_errors
from runner.report.make import _one_line, main

hydra_errors.install(_one_line)
main()
