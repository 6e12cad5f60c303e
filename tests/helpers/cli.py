"""``python -m runner`` as a child process, for tests that signal or watch a whole command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def runner_cli(args: list[str]) -> subprocess.Popen[str]:
    """``python -m runner <args>`` started in the repository, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "runner", *args],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
