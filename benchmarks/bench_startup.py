"""Start-up and bookkeeping cost of a job whose every model call is served from the cache.

An identical rerun makes no model calls, so its wall time is what the runner itself costs:
interpreter + imports + Hydra, setup (config, roles, metric setup, documents, fingerprint),
starting the MLflow run, the documents (chunking, cache look-ups, strategy and metric
bookkeeping) and logging. The job: the 57k-token book from ../shared/data,
``strategy=hier metrics=paper`` against a loopback OpenAI-compatible server, run once to
fill the cache, then rerun. Also times ``python -m runner --help``.

Targets (issue 7): the whole rerun process under 3 s, ``--help`` under 1 s, on this 2-core
machine. Medians of --repeat runs.

    python benchmarks/bench_startup.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import re
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
BOOK = REPO / ".." / "shared" / "data" / "reminiscences-of-pioneer-days-in-st-paul.txt"
_TIMES = re.compile(r"time: (.*)$", re.MULTILINE)


def answer(request: dict[str, Any]) -> str:
    """Summaries from bench_strategies' responder; the judge finds no confusion."""
    from bench_strategies import answer as summary_answer

    if "[Your sentence]" in str(request["messages"][-1]["content"]):
        return "Questions: no confusion\nTypes: no confusion"
    return summary_answer(request)


def job(url: str, folder: Path, books: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "runner",
        "strategy=hier",
        "metrics=paper",
        "data=dir",
        f"data.path={books}",
        "model=openai_compatible",
        f"model.api_base={url}",
        "judge=openai_compatible",
        f"judge.api_base={url}",
        "model.concurrency=16",
        "judge.concurrency=16",
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}",
        f"cache.dir={folder / 'cache'}",
        "progress=false",
    ]


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command[2:6])}...\n{done.stderr[-3000:]}")
    return wall, done.stdout


def phases(stdout: str) -> dict[str, float]:
    """The runner's own 'time: setup 0.31s  tracking_start 0.52s ...' line."""
    line = _TIMES.search(stdout)
    assert line, "no time line in the runner's summary"
    return {
        name: float(value.rstrip("s"))
        for name, value in re.findall(r"(\w+) ([\d.]+s)", line.group(1))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not BOOK.exists():
        print("skipped: ../shared/data is absent (the book is needed)")
        return
    from tests.fake_server import FakeOpenAIServer

    helps = [timed([sys.executable, "-m", "runner", "--help"])[0] for _ in range(args.repeat)]
    print(f"--help: median {statistics.median(helps):.2f} s over {args.repeat} (target < 1 s)")
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(answer) as server:
        folder, books = Path(tmp), Path(tmp) / "books"
        books.mkdir()
        (books / BOOK.name).write_text(BOOK.read_text(encoding="utf-8"), encoding="utf-8")
        first, _ = timed(job(server.url, folder, books))
        calls = len(server.requests)
        print(f"first run (fills the cache): {first:.1f} s, {calls} model calls")
        walls, splits = [], []
        for _ in range(args.repeat):
            wall, out = timed(job(server.url, folder, books))
            walls.append(wall)
            splits.append(phases(out))
        assert len(server.requests) == calls, "a rerun called the model"
    wall = statistics.median(walls)
    median = {k: statistics.median(s[k] for s in splits) for k in splits[0]}
    inside = sum(median.values())
    print(
        f"identical rerun, whole process: median {wall:.2f} s over {args.repeat} "
        f"(target < 3 s; ratio {wall / 3:.2f} of the target)"
    )
    print(f"  interpreter, imports, Hydra: {wall - inside:5.2f} s  ({(wall - inside) / wall:4.0%})")
    for name, value in median.items():
        print(f"  {name.removesuffix('_s'):<27} {value:5.2f} s  ({value / wall:4.0%})")


if __name__ == "__main__":
    main()
