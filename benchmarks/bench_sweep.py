"""A 12-cell sweep against a loopback server at 250 ms per call: first run, identical rerun,
and jobs per minute with the joblib launcher at 1, 2 and 4 workers.

The sweep: ``strategy=hier chunk=512,1024,2048 seed=0,1,2,3`` on one sample story,
``metrics=stats``. The identical rerun finds the same parent run and skips every finished
cell (target: at most 10% of the first run's wall time, zero model calls, no new run). Model
calls are counted at the loopback server. Each joblib measurement uses a fresh store and
cache, so every job does its work.

    python benchmarks/bench_sweep.py [--rounds 1] [--reruns 3] [--no-joblib]

With ``--rounds N`` the first run is repeated in N fresh stores; medians are printed.

``--quick``: two cells (``chunk=1024 seed=0,1``) at 50 ms per call, one rerun, and no joblib
part (its workers each import the runner: about a minute on a small CPU, and
tests/runner/sweep/test_sweeps.py runs the joblib launcher); seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
CELLS = ("strategy=hier", "chunk=512,1024,2048", "seed=0,1,2,3")
QUICK_CELLS = ("strategy=hier", "chunk=1024", "seed=0,1")
LATENCY_S, QUICK_LATENCY_S = 0.25, 0.05


def jobs(cells: tuple[str, ...]) -> int:
    """How many jobs the sweep ``cells`` makes: the product of each key's value count."""
    return math.prod(len(cell.split("=", 1)[1].split(",")) for cell in cells)


def sweep(url: str, folder: Path, cells: tuple[str, ...], *launcher: str) -> float:
    """Wall seconds of one ``-m`` sweep into ``folder``'s store and cache."""
    command = [
        sys.executable,
        "-m",
        "runner",
        "-m",
        *cells,
        *launcher,
        "data.limit=1",
        "metrics=stats",
        "model=openai_compatible",
        f"model.api_base={url}",
        "model.concurrency=4",
        "progress=false",
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}",
        f"cache.dir={folder / 'cache'}",
        f"hydra.sweep.dir={folder / 'sweep'}",
    ]
    start = time.perf_counter()
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return time.perf_counter() - start


def runs_in(folder: Path) -> int:
    """Runs in ``folder``'s store (the sweep's parent and its jobs)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(folder / "mlflow.db")) as db:
        return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _counted(calls: Any, request: dict[str, Any]) -> str:
    """The loopback server's answer, counting the call (in the server's process)."""
    from bench_strategies import answer

    with calls.get_lock():
        calls.value += 1
    return answer(request)


def main() -> None:
    from bench_strategies import loopback_server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="first runs, each in a fresh store")
    parser.add_argument(
        "--reruns", type=int, default=3, help="identical reruns after each first run"
    )
    parser.add_argument(
        "--no-joblib", action="store_true", help="only the first run and the reruns"
    )
    parser.add_argument("--quick", action="store_true", help="two cells, 50 ms per call")
    args = parser.parse_args()
    cells, latency = CELLS, LATENCY_S
    if args.quick:
        cells, latency = QUICK_CELLS, QUICK_LATENCY_S
        args.rounds, args.reruns, args.no_joblib = 1, 1, True
    n_jobs = jobs(cells)
    calls = multiprocessing.Value("i", 0)
    firsts, reruns, ratios, first_calls, rerun_calls, new_runs = [], [], [], [], [], []
    with (
        loopback_server(latency, functools.partial(_counted, calls)) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for round_ in range(max(1, args.rounds)):
            folder = Path(tmp) / f"basic{round_}"
            before = calls.value
            firsts.append(sweep(url, folder, cells))
            first_calls.append(calls.value - before)
            runs, before = runs_in(folder), calls.value
            again = [sweep(url, folder, cells) for _ in range(max(1, args.reruns))]
            rerun_calls.append(calls.value - before)
            new_runs.append(runs_in(folder) - runs)
            reruns += again
            ratios += [a / firsts[-1] for a in again]
            listed = ", ".join(f"{a:.2f}" for a in again)
            print(f"  round {round_ + 1}: first {firsts[-1]:.1f} s; reruns {listed} s")
        med = statistics.median
        print(
            f"{n_jobs}-cell sweep at {latency * 1000:.0f} ms per call, basic launcher: "
            f"first run {med(firsts):.1f} s ({med(first_calls):.0f} model calls)"
            f"{f', median of {len(firsts)}' if len(firsts) > 1 else ''}"
        )
        print(
            f"  identical rerun: {med(reruns):.2f} s (median of {len(reruns)}) = "
            f"{med(ratios):.1%} of the first (target <= 10%); {sum(rerun_calls)} model calls "
            f"and {sum(new_runs)} new runs in all reruns (target 0)"
        )
        if args.no_joblib:
            return
        for workers in (1, 2, 4):
            wall = sweep(
                url,
                Path(tmp) / f"joblib{workers}",
                cells,
                "hydra/launcher=joblib",
                f"hydra.launcher.n_jobs={workers}",
            )
            print(f"  joblib, {workers} worker(s): {wall:.1f} s, {n_jobs / wall * 60:.1f} jobs/min")


if __name__ == "__main__":
    main()
