"""A sweep's jobs sharing a provider's rate limit: before (no ``model.rpm``) and after.

A loopback server behaves like a provider: it allows ``--rpm`` requests per minute (a token
bucket holding one minute, refilled continuously, as Anthropic documents its limits) and
``--in-flight`` requests at once, and answers 429 with Retry-After (whole seconds) beyond
either. A 4-worker joblib sweep (``strategy=hier,incremental`` x two chunk sizes, the 57k-token
book from ../shared/data, ``metrics=paper``, judge = the summarizer) runs three times against
it, each in a fresh store and cache:

1. unlimited: a server without limits, for the reference summaries and scores;
2. before: the limited server, no ``model.rpm`` (each job learns the limit from its 429s);
3. after: the limited server, ``model.rpm`` set to its limit (the jobs share one bucket,
   ``runner/llm/rate.py``).

Printed per run: requests the server accepted and rejected, throughput over the sweep (accepted
requests per minute between the first and the last, as a % of the allowed rate; target >= 90%),
rejected requests as a % of all sent (target <= 1%), wall time, and whether each cell's
summaries (``summaries.json``) and scores are those of the unlimited run. Then the limiter's
own cost per call: the bucket's operations in memory and in the sweep's file, and
``Gateway.complete`` against a zero-latency loopback server with and without ``model.rpm``.

    python benchmarks/bench_rate_limits.py [--rpm 60] [--in-flight 8] [--latency 0.5]

``--quick``: the "after" run alone, over the book's first 3,000 tokens, ``metrics=stats``, the
basic launcher, rpm=600; seconds (its rates are not the figures: too few requests).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import multiprocessing
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
BOOK = REPO.parent / "shared" / "data" / "reminiscences-of-pioneer-days-in-st-paul.txt"
QUICK_TOKENS = 3000


def answer(request: dict[str, Any]) -> str:
    """The strategies' answers (bench_strategies), and a BooookScore verdict per sentence."""
    from bench_strategies import answer as strategy_answer

    prompt = str(request["messages"][-1]["content"])
    if "[Your sentence]" in prompt:
        sentence = prompt.rsplit("[Your sentence]", 1)[1].split("[Your response]", 1)[0]
        if zlib.crc32(sentence.encode()) % 4 == 0:
            return "Questions: Who are the three new families?\nTypes: entity omission"
        return "Questions: no confusion\nTypes: no confusion"
    return strategy_answer(request)


class Limits:
    """The provider's side: requests per minute (a one-minute token bucket) and in flight."""

    def __init__(self, rpm: int | None, in_flight: int | None) -> None:
        self.rpm, self.in_flight = rpm, in_flight
        self.level, self.at = float(rpm or 0), time.monotonic()
        self.open = 0
        self.log: list[tuple[float, int]] = []
        """(wall time, status) of every chat request as it arrived."""
        self.lock = threading.Lock()

    def admit(self) -> str | None:
        """None when the request may go on, else its Retry-After (seconds)."""
        with self.lock:
            now = time.monotonic()
            if self.rpm:
                self.level = min(self.rpm, self.level + (now - self.at) * self.rpm / 60)
                self.at = now
            retry = None
            if self.in_flight and self.open >= self.in_flight:
                retry = "1"
            elif self.rpm and self.level < 1:
                retry = str(max(1, math.ceil((1 - self.level) * 60 / self.rpm)))
            else:
                self.level -= 1 if self.rpm else 0
                self.open += 1
            self.log.append((time.time(), 200 if retry is None else 429))
            return retry

    def done(self) -> None:
        with self.lock:
            self.open -= 1


def _serve(latency: float, rpm: int | None, in_flight: int | None, out: Any, stop: Any) -> None:
    from tests.helpers.fake_server import FakeOpenAIServer

    limits = Limits(rpm, in_flight)

    class LimitedServer(FakeOpenAIServer):
        def _answer(self, request: dict[str, Any], key: str = "", fault: str | None = None) -> Any:
            if "messages" not in request:
                return super()._answer(request, key, fault)
            retry = limits.admit()
            if retry is not None:
                return (
                    429,
                    {"error": {"message": "rate limited", "type": "fake"}},
                    {"Retry-After": retry},
                )
            try:
                return super()._answer(request, key, fault)
            finally:
                limits.done()

    with LimitedServer(answer, latency_s=latency) as server:
        out.put(server.url)
        stop.wait()
    out.put(limits.log)


@contextlib.contextmanager
def provider(latency: float, rpm: int | None, in_flight: int | None) -> Iterator[tuple[str, list]]:
    """The limited server in its own process; the list gets its request log at the end."""
    out: Any = multiprocessing.Queue()
    stop = multiprocessing.Event()
    process = multiprocessing.Process(
        target=_serve, args=(latency, rpm, in_flight, out, stop), daemon=True
    )
    process.start()
    log: list[tuple[float, int]] = []
    try:
        yield str(out.get(timeout=60)), log
    finally:
        stop.set()
        log.extend(out.get(timeout=60))
        process.join(timeout=10)


def sweep(url: str, folder: Path, data: Path, args: argparse.Namespace, *extra: str) -> float:
    """Wall seconds of the ``-m`` sweep into ``folder``'s store and cache."""
    launcher = () if args.quick else ("hydra/launcher=joblib", "hydra.launcher.n_jobs=4")
    command = [
        sys.executable, "-m", "runner", "-m",
        "strategy=hier,incremental", f"chunk={args.chunks}", *launcher,
        "data=dir", f"data.path={data}", f"metrics={'stats' if args.quick else 'paper'}",
        "model=openai_compatible", f"model.api_base={url}", "model.context_window=8192",
        "judge=same", "progress=false", "seed=0", *extra,
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}",
        f"cache.dir={folder / 'cache'}", f"hydra.sweep.dir={folder / 'sweep'}",
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: a job failed (the before run may); counted below
        raise SystemExit(done.stderr[-3000:])
    return time.perf_counter() - start


def results(folder: Path) -> dict[str, tuple[str, dict[str, float], str]]:
    """Per job run name: its summaries.json, its score metrics, its status."""
    with contextlib.closing(sqlite3.connect(folder / "mlflow.db")) as db:
        runs = dict(db.execute("SELECT run_uuid, name FROM runs"))
        status = dict(db.execute("SELECT run_uuid, status FROM runs"))
        metrics: dict[str, dict[str, float]] = {}
        for run, key, value in db.execute("SELECT run_uuid, key, value FROM latest_metrics"):
            if key.startswith(("booookscore", "stats", "summary")):
                metrics.setdefault(run, {})[key] = round(value, 9)
    out = {}
    for path in folder.rglob("summaries.json"):
        run = next(p for p in path.parts if p in runs)
        out[runs[run]] = (path.read_text(encoding="utf-8"), metrics.get(run, {}), status[run])
    return out


def figures(name: str, log: list[tuple[float, int]], wall: float, rpm: int | None) -> None:
    ok = sorted(t for t, status in log if status == 200)
    rejected = sum(1 for _, status in log if status == 429)
    span = (ok[-1] - ok[0]) if len(ok) > 1 else 0.0
    per_minute = (len(ok) - 1) / span * 60 if span else 0.0
    rate = f"{per_minute:.1f}/min" + (f" = {100 * per_minute / rpm:.0f}% of {rpm}" if rpm else "")
    print(
        f"  {name:<9} {len(ok):4d} accepted, {rejected:4d} rejected "
        f"({100 * rejected / max(1, len(log)):.1f}%), throughput {rate}, wall {wall:.0f} s"
    )


def same(reference: dict[str, Any], other: dict[str, Any], failed: list[str]) -> str:
    """Whether each cell has the unlimited run's summaries and scores."""
    missing = sorted(set(reference) - set(other))
    bad = [
        name
        for name, (text, scores, _) in reference.items()
        if name in other and (other[name][0] != text or other[name][1] != scores)
    ]
    if not missing and not bad and not failed:
        return f"same summaries and scores as unlimited in all {len(reference)} cells"
    parts = [f"{len(reference) - len(missing) - len(bad)} of {len(reference)} cells the same"]
    if failed:
        parts.append(f"{len(failed)} job(s) failed ({'; '.join(failed)})")
    if missing:
        parts.append(f"no summaries from {', '.join(missing)}")
    if bad:
        parts.append(f"different summaries or scores in {', '.join(bad)}")
    return "; ".join(parts)


def failures(folder: Path) -> list[str]:
    """The runs that did not finish, each with the first words of why."""
    with contextlib.closing(sqlite3.connect(folder / "mlflow.db")) as db:
        rows = db.execute(
            "SELECT r.name, t.value FROM runs r LEFT JOIN tags t ON t.run_uuid = r.run_uuid "
            "AND t.key = 'failure' WHERE r.status != 'FINISHED' AND r.run_uuid NOT IN "
            "(SELECT run_uuid FROM tags WHERE key = 'runner.kind' AND value = 'sweep')"
        ).fetchall()
    return [f"{name}: {(why or '').rsplit(';', 1)[-1].strip()[:60]}" for name, why in rows]


def overhead(calls: int, folder: Path, with_ray: bool) -> None:
    from runner.llm.buckets import Allowance
    from runner.llm.budget import Budget
    from runner.llm.call_log import CallLog
    from runner.llm.gateway import Gateway, ModelSpec
    from runner.llm.rate import FileStore, MemoryStore, RateLimiter
    from runner.llm.retry import RetryPolicy
    from tests.helpers.fake_server import FakeOpenAIServer

    wide = Allowance(rpm=10**9, tpm=10**12)
    for label, store in (
        ("memory", MemoryStore(wide)),
        ("file (flock)", FileStore(folder / "rate.json", wide)),
    ):
        limiter = RateLimiter(wide, store)
        start = time.perf_counter()
        for _ in range(calls):
            limiter.acquire(100)
            limiter.settle(100, 100, 20)
        print(
            f"  acquire + settle, {label:<13} {(time.perf_counter() - start) / calls * 1e6:7.0f} us"
        )
    if with_ray:
        ray_overhead(calls, wide)
    with tempfile.TemporaryDirectory() as ledger, FakeOpenAIServer(lambda r: "Short.") as server:
        gateways = {}
        for label, rpm, budget in (
            ("unlimited", None, None),
            ("rpm, tpm, one job", 10**9, None),
            ("rpm, tpm, a sweep's file", 10**9, Budget(None, None, f"{ledger}/spend.json")),
        ):
            spec = ModelSpec(
                name="fake", model="openai/fake", api_base=server.url, context_window=8192,
                retry=RetryPolicy(max_attempts=1), rpm=rpm, tpm=rpm,
            )  # fmt: skip
            gateways[label] = Gateway(spec, CallLog(None, budget=budget), cache=None)
            gateways[label].complete("warm up", max_tokens=16)
        samples: dict[str, list[float]] = {label: [] for label in gateways}
        for i in range(calls):  # interleaved, so that drifts in the machine's load hit all three
            for label, gateway in gateways.items():
                start = time.perf_counter()
                gateway.complete(f"prompt {label} {i}", max_tokens=16)
                samples[label].append(time.perf_counter() - start)
        for label, times in samples.items():
            print(f"  Gateway.complete, {label:<24} {statistics.median(times) * 1000:6.2f} ms")


def ray_overhead(calls: int, wide: Any) -> None:
    """The same through a Ray actor (a local Ray started here), when Ray is installed."""
    try:
        import ray
    except ImportError:
        print("  acquire + settle, Ray actor     (ray not installed)")
        return
    from runner.llm.rate import RateLimiter
    from runner.llm.rate_ray import RayStore

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        limiter = RateLimiter(wide, RayStore(ray, "bench-rate", wide))
        start = time.perf_counter()
        for _ in range(calls):
            limiter.acquire(100)
            limiter.settle(100, 100, 20)
        print(
            f"  acquire + settle, Ray actor   {(time.perf_counter() - start) / calls * 1e6:7.0f} us"
        )
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=int, default=60)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--chunks", default="512,1024")
    parser.add_argument("--only", default="unlimited,before,after", help="runs to make")
    parser.add_argument("--quick", action="store_true", help="a slice of the book, seconds")
    args = parser.parse_args()
    if not BOOK.exists():
        print(f"skipped: {BOOK} is absent (../shared/data)")
        return
    if args.quick:
        args.rpm, args.latency, args.chunks, args.only = 600, 0.02, "512", "after"
    with tempfile.TemporaryDirectory(prefix="bench-rate-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        text = BOOK.read_text(encoding="utf-8")
        if args.quick:
            from runner.api.text import decode, encode

            text = decode(encode(text)[:QUICK_TOKENS])
        (data / "book.txt").write_text(text, encoding="utf-8")
        print(
            f"{'quick: ' if args.quick else ''}sweep strategy=hier,incremental chunk={args.chunks}"
            f", server at {args.rpm} requests/min and {args.in_flight} in flight, "
            f"{args.latency * 1000:.0f} ms per call"
        )
        found: dict[str, Any] = {}
        for name in args.only.split(","):
            limited = name != "unlimited"
            rpm = args.rpm if limited else None
            extra = (f"model.rpm={args.rpm}",) if name == "after" else ()
            folder = Path(tmp) / name
            with provider(args.latency, rpm, args.in_flight if limited else None) as (url, log):
                wall = sweep(url, folder, data, args, *extra)
            figures(name, log, wall, rpm)
            found[name] = results(folder)
            if name != "unlimited" and "unlimited" in found:
                print(f"            {same(found['unlimited'], found[name], failures(folder))}")
        print("limiter overhead per call (median):")
        overhead(50 if args.quick else 500, Path(tmp), with_ray=not args.quick)


if __name__ == "__main__":
    main()
