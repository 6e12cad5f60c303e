"""Remake ``requirements.lock`` (Label Studio's whole tree, with hashes) from a working install.

Why: the tests' real Label Studio (``.ci/run``'s label-studio phase) must install the same
packages on every machine. Left to resolve, ``label-studio==1.23.2`` took whatever its ~150
dependencies had released last (sentry-sdk 3.0.1 broke it), so a machine with a warm venv
stayed green while a new one failed.

What it does, in a temporary folder:
1. a new venv with pip from ``requirements-pip.lock`` (by hash);
2. ``pip install -r requirements.in`` (Label Studio's release and any cap it needs);
3. ``label-studio version`` must run: a tree that cannot start is never written;
4. every installed distribution but pip, at its installed version, with the SHA-256 of every
   file PyPI holds for that version (wheels for each platform and the sdist), read from PyPI's
   JSON simple API (PEP 691), as ``pip-compile --generate-hashes`` writes them.

Run it from the repository's root with the Python CI uses, then run ``.ci/run`` (which
rebuilds the venv whenever the lock changes and checks that the server starts)::

    python .ci/label-studio/refresh.py
"""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))  # run as a script from .ci/label-studio/
from tests.runner.annotate.ls_check import installed  # noqa: E402

INPUT = HERE / "requirements.in"
LOCK = HERE / "requirements.lock"
PIP_LOCK = REPO / "requirements-pip.lock"
BUILD = REPO / "requirements-build.txt"
SIMPLE = "https://pypi.org/simple/{name}/"
QUIET = ("--quiet", "--disable-pip-version-check")


def main() -> int:
    """Build, check, freeze, hash, write; a failing step says which and exits non-zero."""
    with tempfile.TemporaryDirectory(prefix="label-studio-refresh-") as folder:
        venv = Path(folder) / "venv"
        python = venv / "bin" / "python"
        _step("make the venv", [sys.executable, "-m", "venv", str(venv)])
        _step("install pip", [str(python), "-m", "pip", "install", *QUIET,
                              "--require-hashes", "-r", str(PIP_LOCK)])  # fmt: skip
        _step("install requirements.in", [str(python), "-m", "pip", "install", *QUIET,
                                          "-r", str(INPUT), "--build-constraint",
                                          str(BUILD)])  # fmt: skip
        _step("label-studio version", [str(venv / "bin" / "label-studio"), "version",
                                       "--data-dir", str(Path(folder) / "data")])  # fmt: skip
        pins = _installed(python)
    LOCK.write_text(_lock_text(pins), encoding="utf-8")
    print(f"wrote {LOCK.relative_to(REPO)}: {len(pins)} packages; run .ci/run to check it starts")
    return 0


def _step(name: str, command: list[str]) -> None:
    done = subprocess.run(command, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = done.stdout.decode(errors="replace")[-3000:]
        sys.exit(f"refresh: step '{name}' failed (exit {done.returncode}):\n{tail}")


def _installed(python: Path) -> dict[str, str]:
    """Every distribution in the venv but pip (installed first, from its own pinned file)."""
    found = installed(python)  # the check's own reading, so the lock and the check agree
    return {name: found[name] for name in sorted(found) if name != "pip"}


def _hashes(name: str, version: str) -> list[str]:
    """SHA-256 of each file PyPI holds for ``name==version``; none found is an error."""
    request = urllib.request.Request(
        SIMPLE.format(name=canonicalize_name(name)),
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = json.load(answer)["files"]
    wanted = Version(version)
    found = sorted(f["hashes"]["sha256"] for f in files if _version_of(f["filename"]) == wanted)
    if not found:
        sys.exit(f"refresh: PyPI lists no file of {name}=={version}; is it from another index?")
    return found


def _version_of(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)[1]
    except (ValueError, InvalidVersion):
        return None
    return None


def _lock_text(pins: dict[str, str]) -> str:
    inputs = [line for line in INPUT.read_text().splitlines() if line and line[0] != "#"]
    header = [
        "# Label Studio for the tests' real server, its whole tree pinned with hashes.",
        f"# Made by .ci/label-studio/refresh.py on {datetime.date.today().isoformat()}",
        f"# from a working install of: {', '.join(inputs)} (requirements.in),",
        f"# Python {platform.python_version()}, {platform.system().lower()} {platform.machine()};"
        " `label-studio version` ran.",
        "# .ci/run installs it with --require-hashes into a venv of its own, pip first from",
        "# requirements-pip.lock. Every package here carries a hash; the few built from an sdist",
        "# build with requirements-build.txt's exact versions, which pip cannot hash-check.",
    ]  # fmt: skip
    blocks = []
    for name, version in pins.items():
        hashes = " \\\n".join(f"    --hash=sha256:{h}" for h in _hashes(name, version))
        blocks.append(f"{name}=={version} \\\n{hashes}")
    return "\n".join(header + blocks) + "\n"


if __name__ == "__main__":
    sys.exit(main())
