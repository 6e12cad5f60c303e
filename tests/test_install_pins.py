"""Every install step outside requirements.lock is pinned by hash, and README and CI agree.

A tool the tests install beside the lock once resolved freely (Label Studio's ~150
dependencies): sentry-sdk 3.0.1 broke it on a new machine while every warm venv stayed green.
These tests read the files; ``tests/runner/annotate/ls_check.py`` checks the venv itself.
"""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.runner.annotate import ls_check

CI_RUN = (REPO / ".ci" / "run").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")
LS_LOCK = REPO / ".ci" / "label-studio" / "requirements.lock"
HASHED_LOCKS = ("requirements-pip.lock", "requirements-nodeps.lock", str(LS_LOCK.relative_to(REPO)))


def _blocks(text: str) -> list[str]:
    """One requirement (with its continuation lines) per block, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return [b for b in re.split(r"\n(?=\S)", "\n".join(lines)) if b.strip()]


@pytest.mark.parametrize("name", HASHED_LOCKS)
def test_each_extra_lock_pins_every_package_exactly_with_a_sha256(name: str) -> None:
    blocks = _blocks((REPO / name).read_text(encoding="utf-8"))
    assert blocks
    for block in blocks:
        assert re.match(r"[A-Za-z0-9][\w.\-]*==[\w.\-+]+ ", block), block
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", block), block


def test_ci_installs_pip_and_the_no_deps_packages_by_hash_from_the_files_the_readme_names() -> None:
    for name in ("requirements-pip.lock", "requirements.lock", "requirements-nodeps.lock"):
        assert f"--require-hashes -r {name}" in README, name
        assert re.search(rf"--require-hashes[ \\\n]+-r {re.escape(name)}", CI_RUN), name
    # Every pip install in .ci/run reads a hashed file, or is the project itself (no index).
    installs = re.findall(r"pip install ((?:\\\n|[^\n])*)", CI_RUN)
    assert len(installs) >= 6
    for args in installs:
        assert "--require-hashes" in args or args.rstrip().endswith("-e ."), args
    assert "--no-build-isolation -e ." in README
    assert "--no-build-isolation -e ." in CI_RUN  # the lock's setuptools, not the newest


def test_label_studio_lock_is_what_requirements_in_asks_and_ci_installs_it() -> None:
    pins = ls_check.locked(LS_LOCK.read_text(encoding="utf-8"))
    asked = (LS_LOCK.parent / "requirements.in").read_text(encoding="utf-8")
    release = re.search(r"^label-studio==(\S+)", asked, re.MULTILINE)
    assert release and pins["label-studio"] == release.group(1)
    # The cap that the sentry-sdk 3 breakage asked for holds in the lock.
    assert "sentry-sdk<3" in asked and int(pins["sentry-sdk"].split(".")[0]) < 3
    assert "pip" not in pins  # pip comes first, from requirements-pip.lock
    assert len(pins) > 100  # the whole tree, not the release alone
    assert 'ls_pip -r "$LS_LOCK"' in CI_RUN and '--require-hashes "$@"' in CI_RUN
    assert "LS_LOCK=" + str(LS_LOCK.relative_to(REPO)) in CI_RUN


def test_drift_names_each_changed_package_with_both_versions() -> None:
    lock = "Django==5.2.20 \\\n    --hash=sha256:ab\nsentry_sdk==2.76.0\nsix==1.17.0\n"
    pins = ls_check.locked(lock)
    found = {"django": "5.2.20", "sentry-sdk": "3.0.1", "requests": "2.34.2"}
    assert ls_check.drift(pins, found) == [
        "requests: 2.34.2 installed, not in the lock",
        "sentry-sdk: 3.0.1 installed, the lock has 2.76.0",
        "six: the lock has 1.17.0, not installed",
    ]
    assert ls_check.drift(pins, {**found, "sentry-sdk": "2.76.0", "six": "1.17.0"}) == [
        "requests: 2.34.2 installed, not in the lock"
    ]


def test_a_label_studio_that_cannot_start_is_reported_with_the_versions_that_changed(
    tmp_path: Path,
) -> None:
    """The failure the issue saw, replayed: the binary dies at start as sentry-sdk 3 made it."""
    binary = tmp_path / "bin" / "label-studio"
    binary.parent.mkdir()
    binary.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "sys.exit(\"TypeError: Unknown option 'send_default_pii'\")\n"
    )
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    pins = {"label-studio": "1.23.2", "sentry-sdk": "2.76.0"}
    found = {"label-studio": "1.23.2", "sentry-sdk": "3.0.1"}
    problems = ls_check.check(binary, pins, found, start=True, root=tmp_path)
    assert problems[0].startswith("it did not start: Label Studio did not answer")
    assert "send_default_pii" in problems[0]
    assert problems[1:] == [
        "its venv differs from .ci/label-studio/requirements.lock:",
        "  sentry-sdk: 3.0.1 installed, the lock has 2.76.0",
    ]
    assert ls_check.check(binary, pins, dict(pins), start=False, root=tmp_path) == []


def test_every_build_from_an_sdist_is_constrained_to_exact_build_dependencies() -> None:
    build = _blocks((REPO / "requirements-build.txt").read_text(encoding="utf-8"))
    assert {b.split("==")[0] for b in build} >= {"setuptools", "scikit-build-core"}
    assert all(re.fullmatch(r"[A-Za-z0-9][\w.\-]*==[\w.\-+]+", b.strip()) for b in build), build
    # The two installs that build sdists (llama-cpp-python; Label Studio's four) use it.
    assert "-r requirements.lock --build-constraint requirements-build.txt" in README
    assert len(re.findall(r"--build-constraint requirements-build\.txt", CI_RUN)) == 2
