"""API keys reach the provider and nothing else: not MLflow, not calls.jsonl, not Hydra's
outputs, not the logs.

A recognisable fake key is exported, a sweep runs against the loopback server (which
checks that the key did arrive as the bearer token), then every file the run wrote and
everything it printed is scanned for the key.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.fake_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-test-DO-NOT-LEAK-7f3a9c1e5b"


def _files_containing(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def test_a_sweep_never_writes_or_prints_the_api_key(tmp_path: Path) -> None:
    env = {**os.environ, "RUNNER_TEST_KEY": SECRET, "OPENAI_API_KEY": SECRET + "-openai"}
    with FakeOpenAIServer() as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "runner",
                "-m",
                "strategy=baseline,hier",
                "chunk=512",
                "model=openai_compatible",
                f"model.api_base={server.url}",
                "model.api_key_env=RUNNER_TEST_KEY",
                "judge=openai_compatible",
                f"judge.api_base={server.url}",
                "judge.api_key_env=RUNNER_TEST_KEY",
                "metrics=paper",
                "data.limit=1",
                "hydra.verbose=true",
                f"tracking.uri=sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
                f"cache.dir={tmp_path / 'cache'}",
                f"hydra.sweep.dir={tmp_path / 'multirun'}",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert server.authorizations and set(server.authorizations) == {f"Bearer {SECRET}"}
    assert (tmp_path / "mlruns").is_dir() and (tmp_path / "multirun").is_dir()
    for needle in (SECRET, SECRET + "-openai"):
        assert needle not in done.stdout and needle not in done.stderr
        assert _files_containing(tmp_path, needle.encode()) == []
    assert "7f3a9c1e5b" not in done.stdout + done.stderr  # not even a fragment


def test_the_scan_would_find_a_leaked_key(tmp_path: Path) -> None:
    (tmp_path / "mlruns").mkdir()
    (tmp_path / "mlruns" / "params.json").write_text(f'{{"api_key": "{SECRET}"}}', encoding="utf-8")
    assert _files_containing(tmp_path, SECRET.encode()) == ["mlruns/params.json"]
