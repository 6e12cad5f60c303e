"""Every benchmark still runs: ``python benchmarks/<name>.py --quick`` exits 0.

Benchmarks are run by hand, so nothing noticed when two of them stopped working after the
code they measure changed. Each one has a quick mode (small input, one repeat, seconds);
this runs it in a fresh interpreter, as a user would. The list is the folder's files, so a
new benchmark is covered without touching this test. A benchmark whose data is absent
(../shared/data on a fresh clone) prints a line starting ``skipped:`` and exits 0; that is
a skip here, and a failure under CI=true, which provides ../shared.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import missing_shared

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
TIMEOUT_S = 300


@pytest.mark.parametrize(
    "script", sorted(p.name for p in BENCHMARKS.glob("bench_*.py")), ids=lambda n: n[:-3]
)
def test_quick_mode_runs(script: str) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick"],
        cwd=BENCHMARKS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    output = f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"{script} --quick failed:\n{output}"
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped:")]
    if skipped:
        missing_shared(f"{script} ({skipped[0]})")
