"""One line for every configuration mistake, including those Hydra itself detects.

Hydra prints composition errors over several lines and ends with a hint about
HYDRA_FULL_ERROR. An entry point calls its ``@hydra.main`` function through ``reported``,
which sets HYDRA_FULL_ERROR=1 for the call (Hydra's documented switch: it then raises the
error itself) and turns a config error into ``error: <problem>; <fix>`` and exit status 2,
the same shape as the runner's own errors. A user who sets HYDRA_FULL_ERROR=1 gets the full
traceback, as Hydra gives it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import TypeVar

import yaml
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


T = TypeVar("T")
_FULL_ERROR = "HYDRA_FULL_ERROR"


def reported(main: Callable[[], T], describe: Callable[[BaseException], str] = one_line) -> T:
    """Call an entry point's ``@hydra.main`` function; a config error exits 2 with one line.

    A config error (Hydra's, OmegaConf's, a YAML file's) ends the process with
    ``error: <describe(err)>`` and exit status 2.

    ``describe`` defaults to ``one_line``; an app with its own settings, such as the report,
    passes its own. Other errors propagate with their traceback.
    """
    if os.environ.get(_FULL_ERROR) == "1":  # the user asked for Hydra's own full report
        return main()
    before = os.environ.get(_FULL_ERROR)
    os.environ[_FULL_ERROR] = "1"  # Hydra re-raises instead of printing its own report
    try:
        return main()
    except (HydraException, OmegaConfBaseException, yaml.YAMLError) as err:
        print(f"error: {describe(err)}", file=sys.stderr)
        sys.exit(2)
    finally:
        if before is None:
            os.environ.pop(_FULL_ERROR, None)
        else:
            os.environ[_FULL_ERROR] = before
