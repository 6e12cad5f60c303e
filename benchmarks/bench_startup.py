"""Start-up and bookkeeping cost of a job whose every model call is served from the cache.

An identical rerun makes no model calls, so its wall time is what the runner itself costs:
interpreter + imports + Hydra, setup (config, roles, metric setup, documents, fingerprint),
starting the MLflow run, the documents (chunking, cache look-ups, strategy and metric
bookkeeping) and logging. The job: the 57k-token book from ../shared/data,
``strategy=hier metrics=paper`` against a loopback OpenAI-compatible server, run once to
fill the cache, then rerun. Also times ``python -m runner --help``.

Both are printed as ratios to a baseline measured in the same run on the same machine:
a fresh interpreter running ``import mlflow, hydra`` (the two imports a job cannot avoid).
Targets: the cached rerun <= 1.5x the baseline, ``--help`` <= 0.5x (what the runner adds to
the imports it cannot avoid stays small). A measurement, not a gate: it exits 0 whether or
not a target is met. Medians of --repeat runs.

    python benchmarks/bench_startup.py [--repeat 3] [--quick]

``--quick``: one repeat, and the job is the first sample story instead of the book (so it
needs no ../shared/data); seconds, to check that the benchmark still runs.

``--server``: the same cached rerun logged to an ``mlflow server`` on PostgreSQL (started
here on loopback ports, as the shared-server tests start it) and to the sqlite store, in
turn (A B A B), each pair's ratio server/sqlite and the medians. Needs PostgreSQL's server
programs and the ``server`` extra.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
BOOK = REPO / ".." / "shared" / "data" / "reminiscences-of-pioneer-days-in-st-paul.txt"
BASELINE = [sys.executable, "-c", "import mlflow, hydra"]
HELP = [sys.executable, "-m", "runner", "--help"]
RERUN_TARGET, HELP_TARGET = 1.5, 0.5
PHASES = ("setup_s", "tracking_start_s", "documents_s")
"""The job's own phase clocks, as the run logs them in usage.json (``time/<phase>``)."""


def answer(request: dict[str, Any]) -> str:
    """Summaries from bench_strategies' responder; the judge finds no confusion."""
    from bench_strategies import answer as summary_answer

    if "[Your sentence]" in str(request["messages"][-1]["content"]):
        return "Questions: no confusion\nTypes: no confusion"
    return summary_answer(request)


def job(url: str, folder: Path, data: list[str]) -> list[str]:
    """The command line of the measured job; ``data``: the overrides that pick its input."""
    return [
        sys.executable,
        "-m",
        "runner",
        "strategy=hier",
        "metrics=paper",
        *data,
        "model=openai_compatible",
        f"model.api_base={url}",
        "judge=openai_compatible",
        f"judge.api_base={url}",
        "model.concurrency=16",
        "judge.concurrency=16",
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}",
        f"cache.dir={folder / 'cache'}",
        "tracking.experiment=bench_startup",
        "progress=false",
    ]


def timed(command: list[str]) -> float:
    """Wall seconds of one process; a failure stops the benchmark with its stderr."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command[1:6])}...\n{done.stderr[-3000:]}")
    return wall


def median_of(command: list[str], repeat: int) -> float:
    """Median wall seconds of ``repeat`` fresh processes."""
    return statistics.median(timed(command) for _ in range(repeat))


def phases(uri: str) -> dict[str, float]:
    """The newest run's phase clocks, read from its usage.json."""
    from mlflow.tracking import MlflowClient

    from runner.tracking.usage import read_usage

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("bench_startup")
    (newest,) = client.search_runs(
        [experiment.experiment_id], order_by=["attributes.start_time DESC"], max_results=1
    )
    usage = read_usage(client, newest.info.run_id)
    return {name: usage[f"time/{name}"] for name in PHASES if f"time/{name}" in usage}


def verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio <= target else "over target"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one sample story, one repeat")
    parser.add_argument("--server", action="store_true", help="a tracking server vs sqlite")
    args = parser.parse_args()
    repeat = 1 if args.quick else max(1, args.repeat)
    if args.quick:
        data, what = ["data=sample", "data.limit=1"], "the first sample story"
    elif BOOK.exists():
        data, what = ["data=dir"], f"the book {BOOK.name}"
    else:
        print("skipped: ../shared/data is absent (the book is needed)")
        return 0
    if args.server:
        return server_vs_sqlite(data, what, repeat)
    from tests.helpers.fake_server import FakeOpenAIServer

    baseline = median_of(BASELINE, repeat)
    helps = median_of(HELP, repeat)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(answer) as server:
        folder = Path(tmp)
        if not args.quick:
            books = folder / "books"
            books.mkdir()
            (books / BOOK.name).write_text(BOOK.read_text(encoding="utf-8"), encoding="utf-8")
            data.append(f"data.path={books}")
        command = job(server.url, folder, data)
        first = timed(command)
        calls = len(server.requests)
        walls, splits = [], []
        for _ in range(repeat):
            walls.append(timed(command))
            splits.append(phases(f"sqlite:///{folder / 'mlflow.db'}"))
        if len(server.requests) != calls:
            raise SystemExit("a rerun called the model: the cache did not serve it")
        floor = median_of(store_floor(folder / "mlflow.db"), repeat)
    report(what, repeat, baseline, helps, first, calls, walls, splits)
    print(
        f"floor `import mlflow, hydra` + opening this sqlite store (MLflow's own cost of any "
        f"job that logs a run): {floor:.2f} s = {floor / baseline:.2f}x the baseline; "
        f"the cached rerun is {wall_of(walls) / floor:.2f}x the floor"
    )
    return 0


def server_vs_sqlite(data: list[str], what: str, repeat: int) -> int:
    """The cached rerun against a tracking server on PostgreSQL and against sqlite, paired."""
    from tests.helpers.tracking_server import mlflow_server, postgres, postgres_bin

    if postgres_bin("initdb") is None:
        print("skipped: PostgreSQL's initdb is not installed")
        return 0
    from tests.helpers.fake_server import FakeOpenAIServer

    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeOpenAIServer(answer) as server,
        postgres() as backend,
        mlflow_server(backend, Path(tmp) / "served") as served,
    ):
        folder = Path(tmp)
        if BOOK.exists() and "data=dir" in data:
            books = folder / "books"
            books.mkdir()
            (books / BOOK.name).write_text(BOOK.read_text(encoding="utf-8"), encoding="utf-8")
            data = [*data, f"data.path={books}"]
        local = job(server.url, folder, data)
        remote = [
            w if not w.startswith("tracking.uri=") else f"tracking.uri={served.url}" for w in local
        ]
        timed(local)  # fills the cache; the server's first job then only logs
        calls = len(server.requests)
        timed(remote)
        pairs = [(timed(remote), timed(local)) for _ in range(repeat)]
        if len(server.requests) != calls:
            raise SystemExit("a rerun called the model: the cache did not serve it")
    ratios = [a / b for a, b in pairs]
    print(f"job: strategy=hier metrics=paper on {what}; {repeat} pair(s), server then sqlite")
    print(
        f"cached rerun logging to mlflow server on PostgreSQL: "
        f"{statistics.median(a for a, _ in pairs):.2f} s; to sqlite: "
        f"{statistics.median(b for _, b in pairs):.2f} s; server/sqlite per pair: median "
        f"{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})"
    )
    return 0


def store_floor(db: Path) -> list[str]:
    """A fresh interpreter that imports MLflow and Hydra and opens the job's sqlite store.

    No job can log an MLflow run for less; it shows how much of the rerun is the runner's.
    """
    code = (
        "import mlflow, hydra\n"
        "from mlflow.tracking import MlflowClient\n"
        f"MlflowClient('sqlite:///{db}').search_experiments()\n"
    )
    return [sys.executable, "-c", code]


def wall_of(walls: list[float]) -> float:
    return statistics.median(walls)


def report(
    what: str,
    repeat: int,
    baseline: float,
    helps: float,
    first: float,
    calls: int,
    walls: list[float],
    splits: list[dict[str, float]],
) -> None:
    """The figures, each ratio against the baseline with its verdict."""
    wall = statistics.median(walls)
    print(f"job: strategy=hier metrics=paper on {what}; medians of {repeat} run(s)")
    print(f"baseline `import mlflow, hydra` (fresh interpreter): {baseline:.2f} s")
    print(
        f"--help: {helps:.2f} s = {helps / baseline:.2f}x the baseline "
        f"(target <= {HELP_TARGET}x): {verdict(helps / baseline, HELP_TARGET)}"
    )
    print(f"first run (fills the cache): {first:.1f} s, {calls} model calls")
    print(
        f"cached rerun, whole process: {wall:.2f} s = {wall / baseline:.2f}x the baseline "
        f"(target <= {RERUN_TARGET}x): {verdict(wall / baseline, RERUN_TARGET)}"
    )
    median = {k: statistics.median(s.get(k, 0.0) for s in splits) for k in PHASES}
    inside = sum(median.values())
    for name, value in median.items():
        print(f"  {name.removesuffix('_s'):<48} {value:5.2f} s  ({value / wall:4.0%})")
    rest, label = wall - inside, "the rest: interpreter, imports, Hydra, logging"
    print(f"  {label:<48} {rest:5.2f} s  ({rest / wall:4.0%})")


if __name__ == "__main__":
    sys.exit(main())
