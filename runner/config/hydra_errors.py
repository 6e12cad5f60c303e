"""One line for every configuration mistake, including those Hydra itself detects.

Hydra prints composition errors over several lines and ends with a hint about
HYDRA_FULL_ERROR. We wrap its reporter (``hydra._internal.utils.run_and_report``, stable
in the pinned hydra-core 1.3.8) so that the user sees ``error: <problem>; <fix>`` and exit
status 2, the same shape as the runner's own errors. HYDRA_FULL_ERROR=1 still gives the
full traceback.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any

import yaml
from hydra._internal import utils as hydra_utils
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

_MISSING_OPTION = re.compile(r"Could not find '([^']+)/([^']+)'")
_OPTIONS = re.compile(r"Available options in '[^']+':\n((?:\t.*\n?)+)")
_OVERRIDE = re.compile(r"Could not override '([^']+)'")


def yaml_line(err: yaml.YAMLError) -> str:
    """A YAML syntax error as its file, line and column (1-based, as editors count)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if mark is None:
        return f"a config file is not valid YAML ({problem}); fix its syntax"
    return (
        f"{mark.name}: line {mark.line + 1}, column {mark.column + 1}: {problem}; "
        "fix the YAML syntax there"
    )


def one_line(err: BaseException) -> str:
    """A single line naming the problem and the fix."""
    if isinstance(err, yaml.YAMLError):
        return yaml_line(err)
    seen = err.__cause__ or err.__context__
    if isinstance(seen, yaml.YAMLError):
        return yaml_line(seen)
    text = str(err)
    missing = _MISSING_OPTION.search(text)
    if missing:
        group, option = missing.groups()
        options = _OPTIONS.search(text)
        listed = ", ".join(o.strip() for o in options.group(1).splitlines()) if options else ""
        return f"{group}={option} is unknown; choose one of: {listed}"
    override = _OVERRIDE.search(text)
    if override:
        key = override.group(1)
        return (
            f"{key} is not a config key; check its spelling (python -m runner --cfg job lists them)"
        )
    return " ".join(text.split())


def _report(func: Callable[[], Any], describe: Callable[[BaseException], str]) -> Any:
    try:
        return func()
    except (HydraException, OmegaConfBaseException, yaml.YAMLError) as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"error: {describe(err)}", file=sys.stderr)
        sys.exit(2)


def install(describe: Callable[[BaseException], str] = one_line) -> None:
    """Route Hydra's error reporting through ``describe`` (default ``one_line``; an app with
    its own settings, such as the report, passes its own); other errors keep Hydra's path.
    """
    original = hydra_utils.run_and_report

    def run_and_report(func: Callable[[], Any]) -> Any:
        return original(lambda: _report(func, describe))

    hydra_utils.run_and_report = run_and_report
