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
from hydra.errors import HydraException, OverrideParseException
from omegaconf.errors import OmegaConfBaseException

from runner.plugins.errors import nearest

_MISSING_OPTION = re.compile(r"Could not find '([^']+)/([^']+)'")
_OPTIONS = re.compile(r"Available options in '[^']+':\n((?:\t.*\n?)+)")
_OVERRIDE = re.compile(r"Could not override '([^']+)'")
_NOT_IN_STRUCT = re.compile(r"Key '[^']+' is not in struct\s+full_key: (\S+)")

RETIRED_OPTIONS = {"strategy": ("precomputed",)}
"""Options kept only so an old spelling gets a clear error: never offered (``--help``, errors)."""


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
    if isinstance(err, OverrideParseException):
        return unparsable(err.override, str(err))
    text = str(err)
    missing = _MISSING_OPTION.search(text)
    if missing:
        group, option = missing.groups()
        options = _OPTIONS.search(text)
        found = [o.strip() for o in options.group(1).splitlines()] if options else []
        offered = [o for o in found if o not in RETIRED_OPTIONS.get(group, ())]
        return f"{group}={option} is unknown; {did_you_mean(option, offered)}"
    override = _OVERRIDE.search(text)
    if override:
        absent = _NOT_IN_STRUCT.search(str(err.__cause__ or ""))
        label = _absent_metric(override.group(1), absent.group(1) if absent else "")
        if label:
            return metric_not_chosen(override.group(1), label, sys.argv[1:])
        key = override.group(1)
        return (
            f"{key} is not a config key; check its spelling (python -m runner --cfg job lists them)"
        )
    return " ".join(text.split())


def _absent_metric(key: str, absent: str) -> str:
    """The label of ``metrics.<label>.<setting>`` when it is the metric that is absent."""
    parts = absent.split(".")
    if key != absent and len(parts) == 2 and parts[0] == "metrics":
        return parts[1]
    return ""


def metric_not_chosen(key: str, label: str, argv: list[str]) -> str:
    """``metrics.<label>.x=...`` for a metric the chosen group does not hold: how to add it.

    "check its spelling" would send the user hunting for a typo in a key that is right.
    """
    groups = metric_groups()
    holders = sorted(group for group, labels in groups.items() if label in labels)
    if not holders:
        every = sorted({name for labels in groups.values() for name in labels})
        return (
            f"{key}: no metric group holds a metric '{label}'; {nearest(label, every)}"
            "python -m runner --help lists the metric groups"
        )
    chosen = [a.split("=", 1)[1] for a in argv if a.startswith("metrics=")]
    current = chosen[-1] if chosen else _default_metrics()
    shown = current if chosen else f"{current}, the default"
    group = label if label in holders else holders[0]
    names = [m.strip() for m in current.strip("[]").split(",") if m.strip() not in ("", "none")]
    both = f"'metrics=[{','.join([*names, group])}]'" if names else f"metrics={group}"
    return (
        f"{key}: the metric '{label}' is not among the chosen metrics (metrics={shown}); "
        f"add it with {both} (groups that hold it: {', '.join(holders)})"
    )


def _default_metrics() -> str:
    """The metrics group ``conf/config.yaml`` chooses when the command line does not."""
    from runner.config.reference.sources import conf_dir

    data = yaml.safe_load((conf_dir() / "config.yaml").read_text(encoding="utf-8")) or {}
    for entry in data.get("defaults") or []:
        if isinstance(entry, dict) and "metrics" in entry:
            return str(entry["metrics"])
    return "none"


def metric_groups() -> dict[str, set[str]]:
    """The metric labels each ``conf/metrics/<group>.yaml`` composes, its defaults included."""
    from runner.config.reference.sources import conf_dir

    folder = conf_dir() / "metrics"
    own: dict[str, set[str]] = {}
    uses: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        own[path.stem] = {k for k in data if k != "defaults"}
        uses[path.stem] = [
            str(d).split("/metrics/", 1)[1].split("@", 1)[0]
            for d in data.get("defaults") or []
            if isinstance(d, str) and d.startswith("/metrics/")
        ]

    def labels(group: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found = set(own.get(group, set()))
        for used in uses.get(group, []):
            if used not in seen:
                found |= labels(used, seen | {group})
        return found

    return {group: labels(group) for group in own}


def did_you_mean(name: str, offered: list[str]) -> str:
    """'did you mean hier? choose one of: ...': the nearest names first, when any is near."""
    return f"{nearest(name, offered)}choose one of: {', '.join(offered)}"


def unparsable(override: str, message: str) -> str:
    """An override Hydra's grammar cannot read (``data.path=~/books``), and how to write it."""
    key, _, value = override.partition("=")
    quoted = f"'{key}=\"{value}\"'"
    if "~" in value:
        home = f"{key}=$HOME{value[1:]} or " if value.startswith("~/") else ""
        return (
            f"{override}: Hydra's override syntax does not take a bare ~; "
            f"write {home}quote it for Hydra: {quoted}"
        )
    if value.startswith("[") and "]" not in value:  # judges=[a, b]: the shell split it
        whole = " ".join([override, *_rest_of_list(override, sys.argv[1:])])
        return (
            f"{override}: the shell cut the list at its space; write it without spaces, "
            f"{whole.replace(' ', '')}, or quote it: '{whole}'"
        )
    first = message.splitlines()[0] if message else "a syntax error"
    return f"cannot read the override {override} ({first}); quote its value for Hydra: {quoted}"


def _rest_of_list(start: str, argv: list[str]) -> list[str]:
    """The words after ``start`` up to the one that closes its list (``claude]``)."""
    if start not in argv:
        return []
    rest = []
    for word in argv[argv.index(start) + 1 :]:
        rest.append(word)
        if "]" in word:
            return rest
    return []


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
