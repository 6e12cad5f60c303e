"""Crash safety: SIGKILL the runner at random points of a run and of a sweep, then rerun it.

A SIGKILL gives the process no chance to clean up: whatever it was writing (a cache entry,
the sqlite store's schema, the final metrics) is cut where it stood. Each trial starts
``python -m runner`` in its own process group against the loopback server, kills the group at
a random moment (seeded), and reruns the same command to completion. Then:

- the rerun exits 0;
- model calls repeated by the rerun (per distinct request body, beyond what an uninterrupted
  reference run sends) are at most the requests in flight at the kill: started before the
  rerun began and answered no earlier than ``GRACE_S`` before the kill (an answer the server
  sent but the client had not yet cached is still in flight);
- every file in the response cache is a whole entry or a temp file no reader opens;
- MLflow holds exactly one FINISHED run per cell (fingerprint), the killed run is KILLED (by
  the rerun, which finds its process gone), and the report's selection and ``finished_run``
  count only the FINISHED ones.

Kill moments are spread over the phases of the run's duration, measured by an uninterrupted
reference run of each command: store creation, start-up (imports, setup), the model calls,
and the end (final metrics, artifacts, exit). The last test prints the figures.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runner.llm.cache import STALE_TMP_S, ResponseCache
from runner.report.runs import select_runs
from runner.tracking.reader import RunRecord, find_runs, finished_run
from runner.tracking.writer import (
    HOST_TAG,
    PID_START_TAG,
    PID_TAG,
    STALE_TAG,
    Tracker,
    owner_alive,
    owner_tags,
)
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.store_template import built_for_real, without_template
from tests.strategies.conftest import echo_summary, kind_of, text_of

pytestmark = pytest.mark.crash

REPO = Path(__file__).resolve().parents[1]
EXPERIMENT = "summarization"
SEED = 20261130
LATENCY_S = 0.1
GRACE_S = 0.25
SINGLE = ("strategy=hier", "chunk=512", "data.limit=2", "model.concurrency=2")
SWEEP = ("-m", "strategy=hier", "chunk=512,768,1024", "data.limit=1", "model.concurrency=2")
SINGLE_PLAN = ("store", "startup", "calls", "end")
SWEEP_PLAN = ("startup", "calls")
"""Every phase of a run and of a sweep is killed once, at a seeded random moment (a sweep's
end is a run's end; its calls are where a kill meets requests in flight)."""
ENTRY = re.compile(r"[0-9a-f]{64}\.json")
ENTRY_KEYS = {"text", "prompt_tokens", "completion_tokens", "finish_reason"}


def answer(request: dict[str, Any]) -> str:
    """Hier's prompts and BooookScore's judge, each summary unique to its prompt.

    Unique answers keep every request body distinct, so a body seen twice is a repeated call.
    """
    prompt = str(request["messages"][-1]["content"])
    if "[Your sentence]" in prompt:
        return "Questions: no confusion\nTypes: no confusion"
    if kind_of(prompt) == "postprocess":
        return echo_summary(prompt)
    tag = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    return f"Record {tag} begins here. " + text_of(int(request["max_tokens"] * 0.4))


@dataclass(frozen=True)
class Reference:
    """An uninterrupted run of one command: seconds from launch, and what it asked."""

    first_call: float
    """When the server received the first model call."""
    last_answer: float
    """When the server answered the last one."""
    end: float
    """When the process exited."""
    bodies: Counter[str]
    """Each distinct request body and how often it was sent."""


@dataclass
class Trial:
    """One kill and its rerun, as measured."""

    kind: str
    phase: str
    killed_at: float | None = None
    """Seconds from launch to the kill; None when the run ended before its kill moment."""
    in_flight: int = 0
    """Requests in flight at the kill (with ``GRACE_S``)."""
    strictly_in_flight: int = 0
    """Requests the server was still answering at the kill, or received after it."""
    repeated: int = 0
    """Model calls sent again by the rerun."""
    tmp_left: int = 0
    """Temp files the kill left in the cache (never read as entries)."""
    rerun_s: float = 0.0
    """Wall time of the rerun."""
    partial_store: bool = False
    """The kill cut MLflow's creation of the store (only its temporary file existed)."""


class Rig:
    """The loopback server, a store template (migrations take seconds) and the references."""

    def __init__(self, server: FakeOpenAIServer, root: Path) -> None:
        self.server, self.root = server, root
        started = time.monotonic()
        with built_for_real():  # the "store" trials kill within these seconds of migrations
            Tracker(f"sqlite:///{root / 'template.db'}", "template")
        self.store_s = time.monotonic() - started
        self.references: dict[str, Reference] = {}

    def folder(self, name: str, warm: bool = True) -> Path:
        """A fresh folder for one run, with a ready store unless ``warm`` is False."""
        folder = self.root / name
        folder.mkdir()
        if warm:
            shutil.copy(self.root / "template.db", folder / "mlflow.db")
        return folder

    def launch(self, args: tuple[str, ...], folder: Path, tag: str) -> subprocess.Popen[bytes]:
        """``python -m runner`` in its own process group, so one killpg takes all of it."""
        url = self.server.url
        overrides = [
            "model=openai_compatible",
            f"model.api_base={url}",
            "model.retry.max_attempts=2",
            "model.retry.base_delay_s=0.01",
            "judge=openai_compatible",
            f"judge.api_base={url}",
            "metrics=paper",
            "progress=false",
            f"tracking.uri=sqlite:///{folder / 'mlflow.db'}",
            f"cache.dir={folder / 'cache'}",
            f"hydra.run.dir={folder / 'out'}",
            f"hydra.sweep.dir={folder / 'sweep'}",
        ]
        with open(folder / f"{tag}.out", "wb") as out, open(folder / f"{tag}.err", "wb") as err:
            return subprocess.Popen(
                [sys.executable, "-m", "runner", *args, *overrides],
                cwd=REPO,
                stdout=out,
                stderr=err,
                # MLflow's own migrations in the child: the "store" trials kill during them
                env=without_template({**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}),
                start_new_session=True,
            )

    def reference(self, kind: str) -> Reference:
        """The uninterrupted run of ``kind`` (measured once, on a ready store)."""
        if kind not in self.references:
            folder = self.folder(f"reference-{kind}")
            first = len(self.server.requests)
            launched = time.monotonic()
            proc = self.launch(command(kind), folder, "run")
            assert proc.wait(timeout=300) == 0, (folder / "run.err").read_text()[-3000:]
            ended = time.monotonic()
            intervals = self.server.intervals[first:]
            self.references[kind] = Reference(
                first_call=intervals[0][0] - launched,
                last_answer=max(end for _, end in intervals) - launched,
                end=ended - launched,
                bodies=Counter(body(r) for r in self.server.requests[first:]),
            )
        return self.references[kind]


def command(kind: str) -> tuple[str, ...]:
    return SINGLE if kind == "single" else SWEEP


def body(request: dict[str, Any]) -> str:
    return json.dumps(request, sort_keys=True)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with FakeOpenAIServer(answer, latency_s=LATENCY_S) as server:
        yield Rig(server, tmp_path_factory.mktemp("crashes"))


TRIALS: list[Trial] = []
PLAN = [("single", phase, i) for i, phase in enumerate(SINGLE_PLAN)] + [
    ("sweep", phase, len(SINGLE_PLAN) + i) for i, phase in enumerate(SWEEP_PLAN)
]


@pytest.mark.parametrize(("kind", "phase", "index"), PLAN, ids=[f"{k}-{p}-{i}" for k, p, i in PLAN])
def test_a_killed_run_reruns_to_one_finished_run_per_cell(
    rig: Rig, kind: str, phase: str, index: int
) -> None:
    reference = rig.reference(kind)
    trial = Trial(kind, phase)
    folder = rig.folder(f"trial-{index}", warm=phase != "store")
    first = len(rig.server.requests)
    launched = time.monotonic()
    proc = rig.launch(command(kind), folder, "killed")
    kill = _kill(
        proc, _moment(proc, phase, random.Random(SEED + index), reference, rig, folder, first)
    )
    time.sleep(0.3)  # a request the client sent just before dying still reaches the server
    before = _statuses(folder / "mlflow.db")
    trial.partial_store = (folder / "mlflow.db.creating").exists() and not (
        folder / "mlflow.db"
    ).exists()
    rerun_from = len(rig.server.requests)
    if kill is not None:
        trial.killed_at = kill - launched
        trial.in_flight, trial.strictly_in_flight = _in_flight(rig.server, first, rerun_from, kill)
    started = time.monotonic()
    rerun = rig.launch(command(kind), folder, "rerun")
    code = rerun.wait(timeout=300)
    trial.rerun_s = time.monotonic() - started
    TRIALS.append(trial)
    assert code == 0, (folder / "rerun.err").read_text()[-3000:]
    sent = Counter(body(r) for r in rig.server.requests[first:])
    assert set(sent) <= set(reference.bodies), "a request no uninterrupted run makes"
    trial.repeated = sum(max(0, n - reference.bodies[b]) for b, n in sent.items())
    assert trial.repeated <= trial.in_flight, (
        f"{trial.repeated} calls repeated, {trial.in_flight} in flight"
    )
    trial.tmp_left = _check_cache(folder / "cache")
    _check_mlflow(f"sqlite:///{folder / 'mlflow.db'}", before, sweep=kind == "sweep")


def _moment(
    proc: subprocess.Popen[bytes],
    phase: str,
    rng: random.Random,
    ref: Reference,
    rig: Rig,
    folder: Path,
    first: int,
) -> Callable[[], float | None]:
    """When to kill: a random point of ``phase`` of the reference's timeline, measured from an
    anchor seen in this run (its launch, its store file, its first model call)."""
    calls = ref.last_answer - ref.first_call
    launched = time.monotonic()

    def after_first_call(delay: float) -> Callable[[], float | None]:
        return lambda: _seen(proc, lambda: len(rig.server.requests) > first, delay)

    if phase == "store":  # MLflow's migrations in progress
        delay = rng.uniform(0.0, rig.store_s)
        return lambda: _seen(proc, lambda: (folder / "mlflow.db.creating").exists(), delay)
    if phase == "startup":
        delay = rng.uniform(0.5, ref.first_call)
        return lambda: launched + delay
    if phase == "calls":
        return after_first_call(rng.uniform(0.0, calls))
    if phase == "end":  # final metrics, artifacts, exit
        return after_first_call(calls + rng.uniform(0.0, ref.end - ref.last_answer))
    raise ValueError(f"unknown phase {phase!r}")


def _seen(proc: subprocess.Popen[bytes], event: Callable[[], bool], delay: float) -> float | None:
    """``delay`` seconds after ``event`` first holds; None if the process exits first."""
    while not event():
        if proc.poll() is not None:
            return None
        time.sleep(0.005)
    return time.monotonic() + delay


def _kill(proc: subprocess.Popen[bytes], moment: Callable[[], float | None]) -> float | None:
    """SIGKILL the process group at ``moment()``; the kill's monotonic time, or None when the
    run ended on its own first."""
    deadline = moment()
    while deadline is not None and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    if deadline is None or proc.poll() is not None:
        proc.wait()
        return None
    killed = time.monotonic()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return killed


def _in_flight(server: FakeOpenAIServer, first: int, last: int, kill: float) -> tuple[int, int]:
    """Requests of the killed process in flight at ``kill``: with ``GRACE_S`` for an answer
    sent but not yet cached, and strictly (still being answered, or received after it)."""
    mine = server.intervals[first:last]
    loose = sum(1 for _, end in mine if end > kill - GRACE_S)
    strict = sum(1 for start, end in mine if end > kill or start > kill)
    return loose, strict


def _statuses(db: Path) -> dict[str, str]:
    """run id -> status, read without MLflow (which would create or migrate the store)."""
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return dict(conn.execute("select run_uuid, status from runs").fetchall())
    except sqlite3.Error:
        return {}


def _check_cache(folder: Path) -> int:
    """Every entry whole and readable through the cache; returns the count of temp files."""
    cache, leftovers = ResponseCache(folder), 0
    for path in (p for p in folder.rglob("*") if p.is_file()):
        if path.suffix == ".tmp":
            leftovers += 1
            continue
        assert ENTRY.fullmatch(path.name), f"unexpected file in the cache: {path}"
        entry = json.loads(path.read_text(encoding="utf-8"))  # a truncated entry fails here
        assert set(entry) >= ENTRY_KEYS, f"{path.name} lacks {ENTRY_KEYS - set(entry)}"
        assert cache.get(path.stem) == entry
    return leftovers


def _check_mlflow(uri: str, before: dict[str, str], sweep: bool) -> None:
    """One FINISHED run per cell, the killed ones KILLED, and reports count only the former."""
    records = find_runs(uri, EXPERIMENT)
    cells: dict[str, list[RunRecord]] = {}
    for run in records:
        if run.fingerprint:
            cells.setdefault(run.fingerprint, []).append(run)
    assert len(cells) == (3 if sweep else 1)
    done_before = {run_id for run_id, status in before.items() if status == "FINISHED"}
    for fingerprint, runs in cells.items():
        finished = [r for r in runs if r.status == "FINISHED"]
        # A single run killed after it had ended FINISHED (while exiting) is a complete run;
        # its rerun is a new one by design (sweeps skip the cell instead).
        again = 0 if sweep else len({r.run_id for r in finished} & done_before)
        assert len(finished) == 1 + again, [(r.run_name, r.status) for r in runs]
        assert {r.status for r in runs} <= {"FINISHED", "KILLED", "FAILED"}
        assert finished_run(uri, EXPERIMENT, fingerprint) == finished[0].run_id  # newest first
    now = {r.run_id: r for r in records}
    for run_id, status in before.items():
        if status == "RUNNING" and now[run_id].fingerprint:
            assert now[run_id].status == "KILLED" and STALE_TAG in now[run_id].tags
    selection = select_runs(records, EXPERIMENT, None)
    assert sorted(r.fingerprint or "" for r in selection.runs) == sorted(cells)
    assert all(r.status == "FINISHED" for r in selection.runs)
    assert not {r.run_id for r in selection.runs} & {
        i for i, s in before.items() if s != "FINISHED"
    }
    parents = [r for r in records if r.tags.get("runner.kind") == "sweep"]
    assert [r.status for r in parents] == (["FINISHED"] if sweep else [])


def test_only_runs_of_dead_processes_of_this_host_and_cell_are_closed(rig: Rig) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    me = owner_tags()
    gone = {PID_TAG: str(dead.pid), PID_START_TAG: ""}
    assert owner_alive(me) and not owner_alive({**me, **gone})
    assert not owner_alive({**me, PID_START_TAG: "1"}), "a reused pid is another process"
    assert owner_alive({**me, **gone, HOST_TAG: "elsewhere"}) and owner_alive({})
    tracker = Tracker(f"sqlite:///{rig.folder('stale') / 'mlflow.db'}", EXPERIMENT)
    runs = {
        name: tracker.start(name, {"fingerprint": fingerprint, **extra})
        for name, fingerprint, extra in [
            ("dead", "f", gone),
            ("alive", "f", {}),
            ("other host", "f", {**gone, HOST_TAG: "elsewhere"}),
            ("other cell", "g", gone),
            ("in a sweep", "f", {**gone, "mlflow.parentRunId": "p"}),
        ]
    }
    assert tracker.close_stale("f", None) == [runs["dead"]]
    statuses = {name: tracker.client.get_run(run_id).info.status for name, run_id in runs.items()}
    assert statuses == {
        "dead": "KILLED",
        "alive": "RUNNING",
        "other host": "RUNNING",
        "other cell": "RUNNING",
        "in a sweep": "RUNNING",
    }
    assert (
        "ended without closing this run"
        in tracker.client.get_run(runs["dead"]).data.tags["failure"]
    )


def test_the_cache_removes_only_old_temp_files(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    (tmp_path / "ab").mkdir()
    old, fresh = tmp_path / "ab" / "tmpold.tmp", tmp_path / "ab" / "tmpnew.tmp"
    old.write_text('{"text": "cut sho')
    fresh.write_text('{"text": "being writ')
    os.utime(old, (time.time() - 2 * STALE_TMP_S,) * 2)
    cache.put("ab" + "0" * 62, {"text": "whole"})
    assert not old.exists() and fresh.exists()
    assert cache.get("ab" + "0" * 62) == {"text": "whole"}


def test_figures(rig: Rig, capsys: pytest.CaptureFixture[str]) -> None:
    """Print what the trials above established (run the whole file to see all of them)."""
    if len(TRIALS) < len(PLAN):
        pytest.skip("run the whole file: the figures cover every trial")
    killed = [t for t in TRIALS if t.killed_at is not None]
    assert len(killed) >= len(PLAN) - 2, "most kill moments should land before the run ends"
    with capsys.disabled():
        print(
            f"\n{len(TRIALS)} trials, {len(killed)} killed mid-run; "
            f"store creation {rig.store_s:.1f} s"
        )
        for kind, ref in rig.references.items():
            print(
                f"  reference {kind}: first call {ref.first_call:.1f} s, "
                f"last answer {ref.last_answer:.1f} s, exit {ref.end:.1f} s, "
                f"{sum(ref.bodies.values())} calls"
            )
        for t in TRIALS:
            at = f"{t.killed_at:5.2f} s" if t.killed_at is not None else "  ended"
            print(
                f"  {t.kind:6} {t.phase:7} kill {at}  in flight {t.in_flight} "
                f"(strictly {t.strictly_in_flight})  repeated {t.repeated}  "
                f"tmp left {t.tmp_left}  rerun {t.rerun_s:.1f} s"
                + ("  (store creation cut)" if t.partial_store else "")
            )
