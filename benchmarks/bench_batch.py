"""Provider batches for the judge: the same BooookScore at half the cost, in one batch, resumable.

The issue's "done when" (issue 30), as a user runs it: ``python -m runner strategy=none
data=summaries data.path=... metrics=paper judge=claude`` as a child process against a
loopback Anthropic server (``tests/helpers/anthropic_server.py``: Messages online, Message
Batches through the ``anthropic`` SDK) started here on 127.0.0.1, three ways, each in its own
response cache and MLflow sqlite store, with a dummy ``ANTHROPIC_API_KEY`` in the child's
environment only:

1. online: ``judge.api_base=<server>``;
2. batch: the same + ``judge.batch=true judge.batch_poll=0.5 judge.batch_gather=1``;
3. kill+rerun: the batch command against a server that holds its batches in progress; the
   process is SIGKILLed once its batch is in the ledger (``runner.llm.batch.ledger``), then
   the server lets batches end and the same command runs again.

The judge flags a sentence when the CRC-32 of its text is divisible by 4, so the expected
BooookScore is computed here from the summaries alone (mean over summaries of 100 x the share
of unflagged sentences), never read from the runner. Printed per run (wall times: medians over
``--repeat``): requests the server received (online requests, or batch requests by custom_id),
batches created, BooookScore and ``cost_usd`` (the run's MLflow metrics), wall time. Then the
checks, each a ratio or an equality: online score == expected, batch score == online, kill+rerun
score == online, batch cost / online cost == 0.500, kill+rerun cost / online cost == 0.500,
batches for the batch job == 1, batches after kill+rerun == 1, online requests during the batch
runs == 0; exit 1 when one fails in any repeat. Last, the runner's own time in batch mode: the
batch job's wall time minus the server's time-to-end (per batch round, the polls a batch stays
in progress x ``batch_poll``), and what that adds to the online run's wall time
(``batch_gather``'s quiet wait, the SDK, submitting, polling, the results, the cache writes).

    python benchmarks/bench_batch.py [--repeat 3] [--books N]

Data: the authors' released claude-88000-hier summaries (../shared/data/booookscore, 98
books; ``--books N``: the first N by name); ``skipped:`` when they are absent. ``--quick``: one
repeat over the three shortest released summaries, or over three built-in summaries when
../shared is absent; seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# After the sys.path insert above, so that these import from this checkout.
from runner.api.text import split_sentences  # noqa: E402
from runner.llm.batch.ledger import Ledger  # noqa: E402
from tests.helpers.anthropic_server import FakeAnthropicServer, text_of  # noqa: E402

RELEASED = REPO.parent / "shared" / "data" / "booookscore" / "claude-88000-hier.summaries.json"
KEY = "bench-batch-dummy-key"
"""The child's ``ANTHROPIC_API_KEY`` (a dummy; the server requires exactly this one)."""
POLL_S = 0.5
GATHER_S = 1.0
STEPS = 2
"""Retrieves a batch stays in progress on the server: it ends at the (STEPS + 1)th."""
BATCH = ("judge.batch=true", f"judge.batch_poll={POLL_S:g}", f"judge.batch_gather={GATHER_S:g}")
KILL_DEADLINE_S = 600.0
GENERATED = {
    "harbour": "Cora paints the harbour at dawn. The boats leave before she finishes. "
    "She keeps the last canvas for her brother. Gulls steal her bread.",
    "letter": "Ben stays home with his dog. A letter arrives at noon. He reads it twice "
    "and burns it. The dog watches the smoke.",
    "island": "Anna sails north in May. Gulls circle the mast all day. She finds the island "
    "on the third night. Nobody believes her map.",
}
"""``--quick`` without ../shared: three short summaries (12 sentences)."""


@dataclass
class Outcome:
    """One run as the server and the MLflow store saw it."""

    requests: int
    """Requests the server received: online requests, or batch requests (custom_ids)."""
    batches: int
    """Batches the server created."""
    online: int
    """Online ``POST /v1/messages`` requests."""
    score: float
    """The run's ``booookscore/score``."""
    cost: float
    """The run's ``cost_usd``."""
    wall: float
    """Wall seconds of the command (the rerun's, for kill+rerun)."""
    killed_after: float = math.nan
    """Kill+rerun: seconds from the start of the first command to its SIGKILL."""
    sizes: tuple[int, ...] = ()
    """Requests in each batch, in order of creation."""


def flagged(sentence: str) -> bool:
    """The scripted judge's verdict: a quarter of sentences, by a hash of their text."""
    return zlib.crc32(sentence.strip().encode()) % 4 == 0


def judge(params: dict[str, Any]) -> str:
    """BooookScore's judge: questions for a flagged sentence, 'no confusion' otherwise."""
    prompt = " ".join(text_of(params["messages"][-1].get("content")))
    sentence = prompt.rsplit("[Your sentence]", 1)[-1].split("[Your response]", 1)[0]
    if flagged(sentence):
        return "Questions: Who is this, and why does it matter here?\nTypes: entity omission"
    return "Questions: no confusion\nTypes: no confusion"


def expected_score(summaries: dict[str, str]) -> float:
    """Mean over summaries of 100 x unflagged sentences / sentences (each occurrence counted)."""
    shares = []
    for summary in summaries.values():
        sentences = split_sentences(summary)
        shares.append(100 * sum(not flagged(s) for s in sentences) / len(sentences))
    return sum(shares) / len(shares)


def load() -> str:
    """The machine's 1-minute load average (other processes slow the wall time)."""
    return f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


def command(data: Path, url: str, folder: Path, *extra: str) -> list[str]:
    """The user's command, into ``folder``'s own store and cache."""
    return [
        sys.executable, "-m", "runner",
        "strategy=none", "data=summaries", f"data.path={data}",
        "metrics=paper", "judge=claude", f"judge.api_base={url}", *extra,
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}", f"cache.dir={folder / 'cache'}",
        "progress=false",
    ]  # fmt: skip


def child_env() -> dict[str, str]:
    """The benchmark's environment plus the dummy key (set for the child only)."""
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "ANTHROPIC_API_KEY": KEY}


def run_to_end(argv: list[str], name: str) -> float:
    """Wall seconds of ``argv``; a failed command stops the benchmark with its stderr."""
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=REPO, env=child_env(), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return wall


def finished_run(folder: Path) -> tuple[float, float]:
    """(booookscore/score, cost_usd) of the one FINISHED run in ``folder``'s store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(experiments, "attributes.status = 'FINISHED'")
    if len(runs) != 1:
        raise SystemExit(f"{folder.name}: {len(runs)} FINISHED runs in its store, expected 1")
    metrics = runs[0].data.metrics
    return metrics["booookscore/score"], metrics["cost_usd"]


def outcome(server: FakeAnthropicServer, folder: Path, wall: float, **extra: float) -> Outcome:
    """What ``server`` received and what the run in ``folder`` recorded."""
    score, cost = finished_run(folder)
    sizes = tuple(len(b.custom_ids) for b in server.batches)
    return Outcome(
        requests=sum(sizes) or len(server.online_requests),
        batches=len(server.batches),
        online=len(server.online_requests),
        score=score,
        cost=cost,
        wall=wall,
        sizes=sizes,
        **extra,
    )


def online(data: Path, folder: Path) -> Outcome:
    """Run 1: every judge call online."""
    with FakeAnthropicServer(judge, api_key=KEY, steps=STEPS) as server:
        wall = run_to_end(command(data, server.url, folder), "online")
        return outcome(server, folder, wall)


def batch(data: Path, folder: Path) -> Outcome:
    """Run 2: ``judge.batch=true``."""
    with FakeAnthropicServer(judge, api_key=KEY, steps=STEPS) as server:
        wall = run_to_end(command(data, server.url, folder, *BATCH), "batch")
        return outcome(server, folder, wall)


def kill_rerun(data: Path, folder: Path) -> Outcome:
    """Run 3: SIGKILL while the batch is in flight, then the same command again."""
    with FakeAnthropicServer(judge, api_key=KEY, steps=STEPS, never_end=True) as server:
        argv = command(data, server.url, folder, *BATCH)
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "killed.stderr"
        start = time.perf_counter()
        with log.open("w", encoding="utf-8") as err:
            child = subprocess.Popen(
                argv, cwd=REPO, env=child_env(), stdout=subprocess.DEVNULL, stderr=err, text=True
            )
            try:
                wait_for_ledger(child, folder / "cache", log)
                os.kill(child.pid, signal.SIGKILL)
                killed_after = time.perf_counter() - start
            finally:
                if child.poll() is None:
                    child.kill()
                child.wait()
        server.never_end = False
        wall = run_to_end(argv, "kill+rerun")
        return outcome(server, folder, wall, killed_after=killed_after)


def wait_for_ledger(child: subprocess.Popen[str], cache: Path, log: Path) -> None:
    """Return once the child's batch is in the ledger; stop if the child ends first."""
    deadline = time.monotonic() + KILL_DEADLINE_S
    while not Ledger(cache).live():
        if child.poll() is not None:
            raise SystemExit(
                f"kill+rerun: the command ended (exit {child.returncode}) before its batch was "
                f"in the ledger:\n{log.read_text(encoding='utf-8')[-3000:]}"
            )
        if time.monotonic() > deadline:
            raise SystemExit(f"kill+rerun: no batch in the ledger after {KILL_DEADLINE_S:.0f} s")
        time.sleep(0.1)


def checks(expected: float, o: Outcome, b: Outcome, k: Outcome) -> list[tuple[str, str, bool]]:
    """(what, measured, passed) for one repeat's three runs."""
    cost_ratio = b.cost / o.cost if o.cost else math.nan
    rerun_ratio = k.cost / o.cost if o.cost else math.nan
    during = b.online + k.online
    return [
        ("online score == expected from the summaries", f"{o.score:.4f} == {expected:.4f}",
         math.isclose(o.score, expected, rel_tol=1e-9)),
        ("batch score == online score", f"{b.score:.4f} == {o.score:.4f}",
         math.isclose(b.score, o.score, rel_tol=1e-12)),
        ("kill+rerun score == online score", f"{k.score:.4f} == {o.score:.4f}",
         math.isclose(k.score, o.score, rel_tol=1e-12)),
        ("batch cost / online cost (0.500)", f"{cost_ratio:.3f}",
         math.isclose(cost_ratio, 0.5, rel_tol=1e-9)),
        ("kill+rerun cost / online cost (0.500)", f"{rerun_ratio:.3f}",
         math.isclose(rerun_ratio, 0.5, rel_tol=1e-9)),
        ("batches for the batch job (1)", str(b.batches), b.batches == 1),
        ("batches after kill+rerun (1)", str(k.batches), k.batches == 1),
        ("online requests during the batch runs (0)", str(during), during == 0),
        ("requests per batch run == online requests (none sent twice)",
         f"{b.requests}, {k.requests} vs {o.requests}",
         b.requests == k.requests == o.requests),
    ]  # fmt: skip


def row(name: str, runs: list[Outcome], extra: str = "") -> None:
    """One run's line: counts, score and cost of the first repeat, the median wall time."""
    first = runs[0]
    wall = statistics.median(r.wall for r in runs)
    if len(first.sizes) > 1:
        extra = f" (batches of {' + '.join(map(str, first.sizes))}){extra}"
    print(
        f"  {name:<11} {first.requests:6d} requests {first.batches:3d} batch(es)  "
        f"BooookScore {first.score:8.4f}  cost_usd {first.cost:9.6f}  wall {wall:6.2f} s{extra}"
    )


def pick(args: argparse.Namespace) -> tuple[str, dict[str, str]] | None:
    """(what the data is, {book: summary}); None when the released file is needed but absent."""
    if not RELEASED.exists():
        if args.quick:
            return "built-in summaries (../shared absent)", dict(GENERATED)
        return None
    released: dict[str, str] = json.loads(RELEASED.read_text(encoding="utf-8"))
    if args.quick:
        books = sorted(released, key=lambda b: (len(split_sentences(released[b])), b))[:3]
    else:
        books = sorted(released)[: args.books] if args.books else sorted(released)
    return f"{RELEASED.name}", {b: released[b] for b in sorted(books)}


def repeat_once(data: Path, root: Path, index: int) -> tuple[Outcome, Outcome, Outcome]:
    """The three runs, each in its own folder."""
    runs: list[Outcome] = []
    steps: list[tuple[str, Callable[[Path, Path], Outcome]]] = [
        ("online", online),
        ("batch", batch),
        ("kill-rerun", kill_rerun),
    ]
    for name, make in steps:
        runs.append(make(data, root / f"{name}-{index}"))
    return runs[0], runs[1], runs[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repeats (median wall times)")
    parser.add_argument("--books", type=int, default=0, help="the first N released books (0: all)")
    parser.add_argument("--quick", action="store_true", help="one repeat, three summaries")
    args = parser.parse_args()
    picked = pick(args)
    if picked is None:
        print(f"skipped: {RELEASED} is absent (fresh clone without ../shared/data)")
        return 0
    source, summaries = picked
    repeat = 1 if args.quick else args.repeat
    expected = expected_score(summaries)
    sentences = sum(len(split_sentences(s)) for s in summaries.values())
    print(
        f"{'quick: ' if args.quick else ''}{source}: {len(summaries)} summaries, {sentences} "
        f"sentences; metrics=paper judge=claude against a loopback Anthropic server; "
        f"batch_poll={POLL_S:g} batch_gather={GATHER_S:g}, a batch in progress for {STEPS} "
        f"polls; median of {repeat}; load {load()}",
        flush=True,
    )
    results: list[tuple[Outcome, Outcome, Outcome]] = []
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        data = Path(tmp) / "summaries.json"
        data.write_text(json.dumps(summaries), encoding="utf-8")
        for index in range(repeat):
            results.append(repeat_once(data, Path(tmp), index))
    report(results)
    return report_checks(expected, results)


def report(results: list[tuple[Outcome, Outcome, Outcome]]) -> None:
    """The runs' lines and what the runner adds in batch mode."""
    onlines, batches, reruns = ([r[i] for r in results] for i in range(3))
    killed = statistics.median(r.killed_after for r in reruns)
    row("online", onlines)
    row("batch", batches)
    row("kill+rerun", reruns, f" (rerun; first command killed after {killed:.2f} s)")
    wall = statistics.median(r.wall for r in batches)
    alone = statistics.median(r.wall for r in onlines)
    rounds = batches[0].batches  # one batch per round here (none near the provider's limits)
    to_end = rounds * STEPS * POLL_S
    print(
        f"runner's own time in batch mode: batch wall {wall:.2f} s - server time-to-end "
        f"({rounds} round(s) x {STEPS} polls x {POLL_S:g} s) = {wall - to_end:.2f} s; against "
        f"the online run's {alone:.2f} s, batch mode adds {wall - to_end - alone:+.2f} s, of "
        f"which {rounds * GATHER_S:g} s is batch_gather's quiet wait before submitting; "
        f"load {load()}"
    )


def report_checks(expected: float, results: list[tuple[Outcome, Outcome, Outcome]]) -> int:
    """Each check, passed only when it holds in every repeat; 1 when one fails."""
    per_repeat = [checks(expected, *runs) for runs in results]
    failed = 0
    print("checks:")
    for i, (what, measured, _) in enumerate(per_repeat[0]):
        passes = sum(found[i][2] for found in per_repeat)
        ok = passes == len(per_repeat)
        failed += not ok
        where = "" if ok else f" (holds in {passes} of {len(per_repeat)} repeats)"
        print(f"  {'ok  ' if ok else 'FAIL'} {what}: {measured}{where}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
