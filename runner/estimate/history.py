"""What this store's finished runs of a model measured: seconds and tokens per call.

Every run logs ``calls.jsonl`` (``runner/llm/call_log.py``): one line per call with the
request (its litellm ``model``, ``max_tokens`` and ``sample``, the regeneration index), the
purpose ('hier/level0', 'booookscore', ...), the provider's token counts and the latency.
The newest runs of the model (``RUNS_READ``) are found in a sqlite store by
``runner.tracking.sqlite_peek`` and read from their artifact folders, without MLflow (slow to
import); on a tracking server (``http(s)://``) they are asked for through MLflow and their
two files downloaded; a store of another kind has no history here and the defaults apply.
The model is matched by its litellm string alone, whatever the server: a model's speed
belongs to the model.
"""

from __future__ import annotations

import functools
import heapq
import json
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.estimate.latency import Latency, fit
from runner.tracking.sqlite_peek import model_run_folders

RUNS_READ = 5
"""Newest finished runs of a model read for its history."""
CALLS_FILE = "calls.jsonl"
USAGE_FILE = "usage.json"


@dataclass(frozen=True)
class History:
    """A model's measured calls, summed up per purpose."""

    runs: int = 0
    """Runs read."""
    calls: int = 0
    """Calls that reached the model (cache hits are not measurements)."""
    latency: Latency | None = None
    """Seconds per call, fitted; None without calls."""
    fill: dict[str, float] = field(default_factory=dict)
    """Purpose -> completion tokens / max_tokens of its first attempts (how much of a budget
    an answer uses)."""
    fill_range: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Purpose -> the least and most ``fill`` measured (the range an estimate prints)."""
    completion: dict[str, float] = field(default_factory=dict)
    """Purpose -> mean completion tokens per call."""
    completion_range: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Purpose -> the fewest and most completion tokens measured in one call."""
    retries: dict[str, float] = field(default_factory=dict)
    """Purpose -> further attempts (regenerations, re-asks) per first attempt."""
    count: dict[str, int] = field(default_factory=dict)
    """Purpose -> calls measured."""
    overhead_s: float | None = None
    """A job's seconds besides its calls (imports, set-up, logging), median over the runs read:
    the run's own time (MLflow's start to end, plus its set-up and the store's start) less its
    calls' span."""

    def calls_of(self, purpose: str) -> int:
        """Calls of ``purpose`` measured (0 when none)."""
        return self.count.get(purpose, 0)


def _lines(folder: Path) -> list[dict[str, Any]]:
    """Every call in one run's calls.jsonl."""
    try:
        text = (folder / CALLS_FILE).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("request"), dict):
            out.append(line)
    return out


def _overhead(folder: Path, seconds: float, lines: list[dict[str, Any]]) -> float | None:
    """The run's seconds besides its calls.

    Start to end, plus what came before the run's start (set-up, MLflow's store), less the
    calls' span.
    """
    starts = [float(x["started_at"]) / 1e9 for x in lines if x.get("started_at")]
    ends = [float(x["started_at"]) / 1e9 + float(x.get("latency_s") or 0) for x in lines]
    if not starts:
        return None
    try:
        table = json.loads((folder / USAGE_FILE).read_text(encoding="utf-8"))
        usage = {row[0]: row[1] for row in table["data"]}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        usage = {}
    setup = float(usage.get("time/setup_s") or 0.0) + float(
        usage.get("time/tracking_start_s") or 0.0
    )
    span = max(ends) - min(starts)
    return max(0.0, seconds + setup - span)  # litellm's import comes before a call's clock


def _served(lines: list[dict[str, Any]], concurrency: int) -> list[tuple[dict[str, Any], float]]:
    """Each call with its seconds at the server, its wait for a free slot taken out.

    A call's ``latency_s`` runs from asking the endpoint's limit (``model.concurrency`` slots)
    to the answer, so a saturated endpoint's calls include their wait. The wait is rebuilt
    by replaying the calls in the order they asked, first come first served, each starting
    when a slot frees (the earliest answer among those holding one).
    """
    out = []
    for base in {str(x["request"].get("api_base")) for x in lines}:
        asked = sorted(
            (x for x in lines if str(x["request"].get("api_base")) == base),
            key=lambda x: float(x.get("started_at") or 0),
        )
        held: list[float] = []  # answer times of the calls holding a slot
        for line in asked:
            start = float(line.get("started_at") or 0) / 1e9
            end = start + float(line.get("latency_s") or 0)
            while held and held[0] <= start:
                heapq.heappop(held)
            begin = heapq.heappop(held) if len(held) >= concurrency else start
            out.append((line, max(0.0, end - max(start, begin))))
            heapq.heappush(held, end)
    return out


@functools.cache
def history(uri: str, model: str, concurrency: int = 8) -> History:
    """The store's measurements of ``model`` (empty when it has none).

    A sqlite store's runs are found without MLflow (``sqlite_peek``); a tracking server's
    are asked for, and their two files downloaded.

    ``concurrency``: the endpoint's limit, taken as the runs' own for their waits.
    """
    if uri.startswith(("http://", "https://")):
        with tempfile.TemporaryDirectory(prefix="runner-history-") as tmp:
            return _measured(_served_folders(uri, model, Path(tmp)), model, concurrency)
    return _measured(model_run_folders(uri, model, RUNS_READ), model, concurrency)


def _served_folders(uri: str, model: str, into: Path) -> list[tuple[Path, float]]:
    """A tracking server's newest runs of ``model``, their two files downloaded into ``into``."""
    from runner.plugins.contract import MODEL_ROLES
    from runner.tracking.reader import served_model_runs

    files = (CALLS_FILE, USAGE_FILE)
    return served_model_runs(uri, model, RUNS_READ, tuple(MODEL_ROLES), files, into)


def _measured(folders: list[tuple[Path, float]], model: str, concurrency: int) -> History:
    """What the runs in ``folders`` (artifact folder, seconds) measured of ``model``."""
    if not folders:
        return History()
    served: list[tuple[dict[str, Any], float]] = []
    overheads = []
    for folder, seconds in folders:
        every = _lines(folder)
        overhead = _overhead(folder, seconds, every)
        if overhead is not None:
            overheads.append(overhead)
        mine = [x for x in every if x["request"].get("model") == model and not x.get("cached")]
        served += _served(mine, max(1, concurrency))
    lines = [line for line, _ in served]
    if not lines:
        return History(runs=len(folders))
    samples = [
        (float(x["prompt_tokens"]), float(x["completion_tokens"]), service) for x, service in served
    ]
    measured = f"measured: {len(lines)} calls of {len(folders)} runs in this store"
    return History(
        runs=len(folders),
        calls=len(lines),
        latency=fit(samples, measured),
        overhead_s=statistics.median(overheads) if overheads else None,
        **_per_purpose(lines),
    )


def _per_purpose(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """fill, completion (with their ranges), retries and count per purpose (``History``)."""
    fills: dict[str, list[float]] = defaultdict(list)
    completions: dict[str, list[float]] = defaultdict(list)
    firsts: dict[str, int] = defaultdict(int)
    later: dict[str, int] = defaultdict(int)
    for line in lines:
        purpose = str(line.get("purpose") or "")
        request = line.get("request") or {}
        completion = float(line.get("completion_tokens") or 0)
        completions[purpose].append(completion)
        if int(request.get("sample") or 0) > 0:
            later[purpose] += 1
            continue
        firsts[purpose] += 1
        cap = request.get("max_tokens")
        if isinstance(cap, int) and cap > 0:
            fills[purpose].append(min(1.0, completion / cap))
    return {
        "fill": {p: sum(v) / len(v) for p, v in fills.items() if v},
        "fill_range": {p: (min(v), max(v)) for p, v in fills.items() if v},
        "completion": {p: sum(v) / len(v) for p, v in completions.items() if v},
        "completion_range": {p: (min(v), max(v)) for p, v in completions.items() if v},
        "retries": {p: later[p] / firsts[p] for p in firsts if firsts[p]},
        "count": {p: len(v) for p, v in completions.items()},
    }
