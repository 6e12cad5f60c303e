"""estimate=true against reality: predicted / actual calls, tokens and wall time.

For each case the estimate is made in-process (the code behind ``estimate=true``), then the
real job runs (``python -m runner ...`` in a subprocess, response cache off) against the
loopback server tests/helpers/fake_server.py answering after a fixed latency, and its run's figures
are read back from the store. The server decides the answers' lengths: bench_strategies'
responder (summaries at 60% of max_tokens, compressions at their word target) and a
BooookScore verdict ("no confusion") for the judge.

Cases: BooookScore over given summaries (data=summaries with the authors' released
claude-88000-hier summaries, strategy=none metrics=booookscore), hier and incremental over
the 57k-token book at chunk 1024 and 2048 (metrics=none). All share one store, so every
estimate after the first uses the store's measured seconds and tokens per call
(``runner/estimate/history.py``): the "cold" column is the same estimate over an empty
store (documented defaults), the "warm" one over the store as it is. Targets: BooookScore
calls and tokens within 10%; hier and incremental calls within 15%, tokens within 25%,
wall within 30% (the warm point estimate). The cold estimate's printed range (its guesses at
their bounds) is shown beside, and whether it holds the actual figure. Wall = the job's
process, start to exit.

    python benchmarks/bench_estimate.py [--latency 1.0] [--repeat 3] [--books 3]

``--quick``: the book's first 8,000 tokens, hier at chunk 1024 and one summary, 50 ms a call,
one run each; seconds, to check the benchmark runs (its ratios are not the figures).
Skips cleanly (exit 0) without ../shared/data.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
SHARED = REPO.parent / "shared" / "data"
BOOK = SHARED / "reminiscences-of-pioneer-days-in-st-paul.txt"
SUMMARIES = SHARED / "booookscore" / "claude-88000-hier.summaries.json"
JUDGE_PROMPT = "determine if that sentence causes any confusion"
QUICK_CHARS = 32000  # about 8,000 tokens of English prose


def respond(request: dict[str, Any]) -> str:
    """A verdict for BooookScore's judge, else bench_strategies' realistic lengths."""
    from bench_strategies import answer

    if any(JUDGE_PROMPT in str(m.get("content", "")) for m in request["messages"]):
        return "Questions: no confusion\nTypes: no confusion"
    return answer(request)


def fake(role: str, url: str) -> list[str]:
    """Overrides pointing ``role`` at the loopback server."""
    return [
        f"{role}=openai_compatible",
        f"{role}.api_base={url}",
        f"{role}.model=openai/fake",
        f"{role}.context_window=8192",
        f"{role}.concurrency=8",
    ]


def cases(books: Path, quick: bool, limit: int) -> list[tuple[str, list[str], float, float]]:
    """(name, overrides, calls and tokens tolerance, wall tolerance or 0 for none).

    The response cache is off, for the job and so for its estimate: every call is real.
    """
    text = [f"data=dir data.path={books}", "metrics=none", "cache.enabled=false"]
    judged = (
        f"strategy=none data=summaries data.path={SUMMARIES} data.limit={limit} metrics=booookscore"
        " cache.enabled=false"
    )
    out = [("booookscore given", judged.split(), 0.10, 0.0)]
    for strategy in ("hier",) if quick else ("hier", "incremental"):
        for chunk in (1024,) if quick else (1024, 2048):
            overrides = [f"strategy={strategy}", f"chunk={chunk}", *" ".join(text).split()]
            out.append((f"{strategy} {chunk}", overrides, 0.15, 0.30))
    return out


def judge(overrides: list[str], url: str) -> list[str]:
    """The loopback judge, for a job whose metrics ask one (a job refuses an unasked role)."""
    return [] if "metrics=none" in overrides else fake("judge", url)


def estimated(overrides: list[str], uri: str) -> tuple[Any, float]:
    """The estimate of the job ``overrides`` over the store ``uri``, and its seconds."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from runner.config.run_config import build_run_config
    from runner.estimate import command, history

    history.history.cache_clear()
    started = time.perf_counter()
    with initialize_config_module(config_module="runner.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=[*overrides, f"tracking.uri={uri}"])
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    config = build_run_config({str(k): v for k, v in raw.items()}, tuple(overrides))
    cell = command.estimate(config, " ".join(overrides))
    return cell, time.perf_counter() - started


def run_job(overrides: list[str], uri: str) -> tuple[dict[str, float], float]:
    """Run the job for real; its run's totals from the store, and the process's seconds."""
    command = [sys.executable, "-m", "runner", *overrides, f"tracking.uri={uri}"]
    command += ["progress=off"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"job failed: {' '.join(overrides)}\n{done.stderr[-3000:]}")
    path = uri[len("sqlite:///") :]
    with closing(sqlite3.connect(path)) as db:
        run = db.execute("SELECT run_uuid FROM runs ORDER BY start_time DESC LIMIT 1").fetchone()
        rows = db.execute(
            "SELECT key, value FROM latest_metrics WHERE run_uuid = ?", (run[0],)
        ).fetchall()
    return {str(k): float(v) for k, v in rows}, wall


def ratio(predicted: float, actual: float) -> float:
    """predicted / actual (1.0 when both are 0)."""
    return predicted / actual if actual else (1.0 if not predicted else float("inf"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="server seconds per call")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; medians reported")
    parser.add_argument("--books", type=int, default=3, help="given summaries judged")
    parser.add_argument("--quick", action="store_true", help="a slice of the book, one run")
    args = parser.parse_args()
    if args.quick:
        args.latency, args.repeat, args.books = 0.05, 1, 1
    if not BOOK.exists() or not SUMMARIES.exists():
        print(f"skipped: {BOOK.parent.resolve()} is absent (fresh clone without ../shared/data)")
        return 0
    from bench_strategies import loopback_server

    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as tmp:
        folder = Path(tmp)
        books = folder / "books"
        books.mkdir()
        text = BOOK.read_text(encoding="utf-8")
        (books / BOOK.name).write_text(text[:QUICK_CHARS] if args.quick else text, "utf-8")
        uri = f"sqlite:///{folder / 'mlflow.db'}"
        empty = f"sqlite:///{folder / 'empty.db'}"
        with loopback_server(args.latency, respond) as url:
            rows = [
                measure(name, [*o, *fake("model", url), *judge(o, url)], uri, empty, args)
                + (calls_tol, wall_tol)
                for name, o, calls_tol, wall_tol in cases(books, args.quick, args.books)
            ]
    report(rows, args)
    return 0


def measure(
    name: str, overrides: list[str], uri: str, empty: str, args: argparse.Namespace
) -> tuple[Any, ...]:
    """(name, cold, warm, actual figures, estimate seconds) of one case, medians of repeats."""
    colds, warms, actuals, seconds = [], [], [], []
    for _ in range(args.repeat):
        cold, _ = estimated(overrides, empty)
        warm, took = estimated(overrides, uri)
        metrics, wall = run_job(overrides, uri)
        colds.append(figures(cold))
        warms.append(figures(warm))
        actuals.append(
            {
                "calls": metrics.get("calls", 0.0),
                "tokens": metrics.get("prompt_tokens", 0.0) + metrics.get("completion_tokens", 0.0),
                "wall": wall,
            }
        )
        seconds.append(took)
    return name, median(colds), median(warms), median(actuals), statistics.median(seconds)


def figures(cell: Any) -> dict[str, float]:
    """calls, tokens and wall of an estimate: its point values and its range's ends."""
    low, high = cell.range.low, cell.range.high
    return {
        "calls": cell.calls,
        "tokens": cell.prompt_tokens + cell.completion_tokens,
        "wall": cell.wall_s,
        "calls_low": low.calls,
        "calls_high": high.calls,
        "tokens_low": low.prompt_tokens + low.completion_tokens,
        "tokens_high": high.prompt_tokens + high.completion_tokens,
        "wall_low": low.wall_s,
        "wall_high": high.wall_s,
    }


def median(items: list[dict[str, float]]) -> dict[str, float]:
    """Per-key median."""
    return {k: statistics.median(x[k] for x in items) for k in items[0]}


def report(rows: list[tuple[Any, ...]], args: argparse.Namespace) -> None:
    """The table: cold and warm predictions, actual, predicted / actual; targets met?"""
    print(
        f"loopback server at {args.latency * 1000:.0f} ms a call, concurrency 8; medians of "
        f"{args.repeat} run(s); cold = no history (defaults), warm = this store's history"
    )
    print(
        f"{'case':<18} {'figure':<6} {'cold':>9} {'warm':>9} {'actual':>9} {'cold/act':>8} "
        f"{'warm/act':>8} {'cold range':>19} {'holds':>5}  target"
    )
    failed = []
    for name, cold, warm, actual, took, tol, wall_tol in rows:
        for key in ("calls", "tokens", "wall"):
            limit = {"calls": tol, "tokens": 0.25 if wall_tol else tol, "wall": wall_tol}[key]
            r_cold, r_warm = ratio(cold[key], actual[key]), ratio(warm[key], actual[key])
            ok = not limit or abs(r_warm - 1) <= limit
            if not ok:
                failed.append(f"{name} {key}")
            target = f"±{limit:.0%} {'met' if ok else 'NOT met'}" if limit else "-"
            low, high = cold[f"{key}_low"], cold[f"{key}_high"]
            span = f"{low:,.0f}-{high:,.0f}"
            holds = "yes" if low <= actual[key] <= high else "no"
            print(
                f"{name:<18} {key:<6} {cold[key]:>9,.0f} {warm[key]:>9,.0f} {actual[key]:>9,.0f} "
                f"{r_cold:>8.2f} {r_warm:>8.2f} {span:>19} {holds:>5}  {target}"
            )
        print(f"{name:<18} estimate took {took:.2f} s in-process")
    print("targets (warm estimate):", "all met" if not failed else "NOT met: " + ", ".join(failed))


if __name__ == "__main__":
    sys.exit(main())
