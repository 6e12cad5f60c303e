"""A 12-cell sweep against a loopback server at 250 ms per call: first run, identical rerun,
and jobs per minute with the joblib launcher at 1, 2 and 4 workers.

The sweep: ``strategy=hier chunk=512,1024,2048 seed=0,1,2,3`` on one sample story,
``metrics=stats``. The identical rerun finds the same parent run and skips every finished
cell (target: at most 10% of the first run's wall time, and zero model calls). Each
joblib measurement uses a fresh store and cache, so every job does its work.

    python benchmarks/bench_sweep.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
CELLS = ["strategy=hier", "chunk=512,1024,2048", "seed=0,1,2,3"]
JOBS = 12


def sweep(url: str, folder: Path, *launcher: str) -> float:
    """Wall seconds of one ``-m`` sweep into ``folder``'s store and cache."""
    command = [
        sys.executable, "-m", "runner", "-m", *CELLS, *launcher, "data.limit=1", "metrics=stats",
        "model=openai_compatible", f"model.api_base={url}", "model.concurrency=4", "progress=false",
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}", f"cache.dir={folder / 'cache'}",
        f"hydra.sweep.dir={folder / 'sweep'}",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return time.perf_counter() - start


def calls_so_far(folder: Path) -> int:
    """Model calls the sweep's runs made (MLflow's ``calls`` metric, summed)."""
    from runner.results import find_runs

    runs = find_runs(f"sqlite:///{folder / 'mlflow.db'}")
    return int(sum(r.metrics.get("calls", 0) for r in runs))


def main() -> None:
    from bench_strategies import loopback_server

    with loopback_server(0.25) as url, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "basic"
        first = sweep(url, folder)
        calls = calls_so_far(folder)
        again = sweep(url, folder)
        print(f"12-cell sweep, basic launcher: first run {first:.1f} s ({calls} model calls)")
        print(f"  identical rerun: {again:.1f} s = {again / first:.0%} of the first (target <= 10%), "
              f"{calls_so_far(folder) - calls} new model calls (target 0)")
        for workers in (1, 2, 4):
            wall = sweep(url, Path(tmp) / f"joblib{workers}", "hydra/launcher=joblib", f"hydra.launcher.n_jobs={workers}")
            print(f"  joblib, {workers} worker(s): {wall:.1f} s, {JOBS / wall * 60:.1f} jobs/min")


if __name__ == "__main__":
    main()
