"""Is the tests' Label Studio the one its lock describes, and does it start?

``.ci/run`` runs ``python -m tests.runner.annotate.ls_check`` on every run (the venv's packages
against ``.ci/label-studio/requirements.lock``, about a second) and with ``--start`` when it
has just (re)built the venv: the server starts as the round-trip test starts it
(``ls_server.start``) and answers ``/health``. A failure names the packages whose versions
differ from the lock, since a dependency's new release is what broke a fresh machine before
(sentry-sdk 3.0.1, while every warm venv stayed green).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.runner.annotate import ls_server

REPO = Path(__file__).resolve().parents[3]
LOCKS = (REPO / ".ci" / "label-studio" / "requirements.lock", REPO / "requirements-pip.lock")
SHOWN = 20  # drift lines printed before "... and N more"


def canonical(name: str) -> str:
    """A distribution's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(*texts: str) -> dict[str, str]:
    """``name==version`` pins of requirements files, by canonical name."""
    pins: dict[str, str] = {}
    for text in texts:
        for name, version in re.findall(r"^([A-Za-z0-9][\w.\-]*)==(\S+)", text, re.MULTILINE):
            pins[canonical(name)] = version
    return pins


def installed(python: Path) -> dict[str, str]:
    """The distributions of the venv that ``python`` belongs to, by canonical name."""
    code = (
        "import importlib.metadata as m, json;"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    done = subprocess.run([str(python), "-c", code], check=True, capture_output=True)
    return {canonical(name): version for name, version in json.loads(done.stdout).items()}


def drift(pins: dict[str, str], found: dict[str, str]) -> list[str]:
    """One line per package whose installed version is not the lock's (or that one side lacks)."""
    lines = []
    for name in sorted(pins.keys() | found.keys()):
        want, have = pins.get(name), found.get(name)
        if want == have:
            continue
        if have is None:
            lines.append(f"{name}: the lock has {want}, not installed")
        elif want is None:
            lines.append(f"{name}: {have} installed, not in the lock")
        else:
            lines.append(f"{name}: {have} installed, the lock has {want}")
    if len(lines) > SHOWN:
        lines = [*lines[:SHOWN], f"... and {len(lines) - SHOWN} more"]
    return lines


def check(
    binary: Path, pins: dict[str, str], found: dict[str, str], start: bool, root: Path
) -> list[str]:
    """What is wrong with the Label Studio at ``binary``: empty when nothing is."""
    problems = [f"  {line}" for line in drift(pins, found)]
    if problems:
        problems.insert(0, "its venv differs from .ci/label-studio/requirements.lock:")
    if start:
        try:
            ls_server.start(binary, root).stop()
        except AssertionError as err:
            problems.insert(0, f"it did not start: {err}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Check the venv (and with ``--start`` the server); one block naming what is wrong."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", action="store_true", help="also start it and ask /health")
    args = parser.parse_args(argv)
    binary = ls_server.binary()
    pins = locked(*(path.read_text(encoding="utf-8") for path in LOCKS))
    begun = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="label-studio-check-") as root:
        problems = check(binary, pins, installed(binary.parent / "python"), args.start, Path(root))
    if problems:
        print(f"Label Studio at {binary}: " + "\n".join(problems), file=sys.stderr)
        print("fix: rebuild it from the lock (delete its venv, run .ci/run), or refresh the lock"
              " with python .ci/label-studio/refresh.py", file=sys.stderr)  # fmt: skip
        return 1
    started = f", started and answered /health in {time.monotonic() - begun:.0f} s" * args.start
    print(f"Label Studio at {binary}: its {len(pins)} packages are the lock's{started}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
