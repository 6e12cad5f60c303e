"""Provider rate limits shared by a sweep's jobs (runner/llm/rate.py, buckets.py, rate_ray.py).

The buckets' arithmetic against refill times computed by hand (a fake clock); two processes
sharing the sweep's file never exceed the rate at the loopback server; a 429 with Retry-After
seen by one job holds the other's requests too; the settings' config errors.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from runner.api.errors import ConfigError
from runner.config.run_config import build_run_config
from runner.llm.buckets import Allowance, Buckets
from runner.llm.budget import Budget
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.rate import FileStore, MemoryStore, RateLimiter, endpoint_file
from runner.llm.rate_ray import BucketKeeper, RayStore, actor_name
from runner.llm.retry import RetryPolicy
from runner.llm.spec import NOT_IN_FINGERPRINT, ModelSpec
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply
from tests.runner.config.test_config import composed


class Clock:
    """A fake clock that sleeping moves forward."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 9))
        self.now += seconds


def test_requests_go_at_the_refill_rate_after_a_one_second_burst() -> None:
    buckets = Buckets(Allowance(rpm=120), None, now=0.0)  # holds 2, refills 120 - 2 a minute
    waits = [buckets.reserve({"rpm": 1}, now=0.0)[0] for _ in range(5)]
    assert waits == [0.0, 0.0, *(pytest.approx(k * 60 / 118) for k in (1, 2, 3))]
    assert buckets.levels["rpm"] == -3.0
    buckets.reserve({"rpm": 1}, now=10.0)  # refilled to its 2, never beyond: 2 - 1 left
    assert buckets.levels["rpm"] == 1.0


@pytest.mark.parametrize("rpm", [1, 2, 20, 60, 600])
def test_no_sliding_minute_holds_more_than_the_limit(rpm: int) -> None:
    """A provider counting a sliding 60-s window (ends included) never sees rpm + 1 requests.

    Requests are sent as soon as the buckets allow, in bursts after idle spells (which refill
    the bucket to full); every window of 60 s from one send time is counted.
    """
    buckets = Buckets(Allowance(rpm=rpm), None, now=0.0)
    sent: list[float] = []
    now = 0.0
    for burst in range(3):
        for _ in range(rpm + 3):
            wait, _ = buckets.reserve({"rpm": 1}, now=now)
            now += wait
            sent.append(now)
        now += 200.0 * (burst + 1)  # idle: the bucket fills again
    most = max(sum(1 for t in sent if start <= t <= start + 60 + 1e-9) for start in sent)
    assert most <= rpm
    assert most >= rpm // 2  # not starved either: rpm=1 sends one every two minutes


def test_a_prompt_larger_than_the_burst_goes_when_full_and_delays_the_next() -> None:
    buckets = Buckets(Allowance(tpm=6000), None, now=0.0)  # holds 100, refills 5,900 a minute
    rate = 5900 / 60
    assert buckets.reserve({"tpm": 500}, now=0.0)[0] == 0.0  # full: it goes, 400 in debt
    assert buckets.reserve({"tpm": 50}, now=0.0)[0] == pytest.approx(450 / rate)  # 50 + 400
    buckets.settle({"tpm": 200}, now=1.0)  # its completion: -450 + 1 s refilled - 200
    assert buckets.levels["tpm"] == pytest.approx(-650.0 + rate)
    buckets.settle({"tpm": -1000}, now=1.0)  # a prompt overestimated: back up to the cap only
    assert buckets.levels["tpm"] == 100.0


def test_input_and_output_tokens_have_buckets_of_their_own() -> None:
    limiter = RateLimiter(
        Allowance(input_tpm=600, output_tpm=60),
        MemoryStore(Allowance(input_tpm=600, output_tpm=60)),
    )
    limiter.acquire(5)
    limiter.settle(estimated=5, prompt_tokens=8, completion_tokens=4)
    levels = limiter.store._buckets.levels  # type: ignore[attr-defined]
    assert levels["input_tpm"] == pytest.approx(10 - 8, abs=0.01)  # holds 10; 5 + 3 taken
    assert levels["output_tpm"] == pytest.approx(1 - 4, abs=0.01)  # holds 1; 4 charged after


def test_a_pause_delays_the_queue_by_its_length_without_a_burst_after_it() -> None:
    buckets = Buckets(Allowance(rpm=60), None, now=0.0)  # holds 1, refills 59 a minute
    rate = 59 / 60
    assert buckets.reserve({"rpm": 1}, now=0.0) == (0.0, 0.0)
    assert buckets.reserve({"rpm": 1}, now=0.0) == (pytest.approx(1 / rate), 0.0)  # its turn
    buckets.pause(5.0, now=0.5)  # a 429 at t=0.5, Retry-After 5: nothing before t=5.5
    assert buckets.check(now=0.5) == (5.0, 5.0)  # the reservation above moves by 5 s
    # at t=0.5 the bucket owes 1 - 0.5 * rate; this request's own 1 comes on top, after t=5.5
    expected = 5.0 + (2 - 0.5 * rate) / rate
    assert buckets.reserve({"rpm": 1}, now=0.5) == (pytest.approx(expected), 5.0)
    buckets.pause(2.0, now=1.0)  # a shorter Retry-After inside the pause changes nothing
    assert buckets.check(now=1.0) == (4.5, 5.0)


def test_the_limiter_sleeps_its_reservation_and_the_pause_another_job_started() -> None:
    clock = Clock()
    store = MemoryStore(Allowance(rpm=60), clock=clock)
    limiter = RateLimiter(Allowance(rpm=60), store, sleep=clock.sleep, clock=clock)
    limiter.acquire(0)
    limiter.acquire(0)
    turn = 60 / 59  # one request's refill at 59 a minute (runner.llm.buckets.refill)
    assert clock.slept == [pytest.approx(turn)] and clock.now == pytest.approx(turn)
    store.pause(3.0)  # another job's 429 then
    limiter.acquire(0)
    assert clock.slept == [pytest.approx(turn), pytest.approx(3.0 + turn)]  # pause, its turn


def _sender(path: str, url: str, rpm: int, count: int) -> None:
    """One job: ``count`` requests, each after the shared bucket allows it."""
    allowance = Allowance(rpm=rpm)
    limiter = RateLimiter(allowance, FileStore(Path(path), allowance))
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    for _ in range(count):
        limiter.acquire(0)
        request = urllib.request.Request(
            f"{url}/chat/completions", body, {"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=10).read()


def test_two_processes_sharing_the_file_never_exceed_the_rate(tmp_path: Path) -> None:
    rpm, count = 600, 12  # 10 per second, a burst of 10: 24 requests take >= 1.4 s
    path = endpoint_file(tmp_path, ("openai/m", "http://x"))
    spawn = multiprocessing.get_context("spawn")
    with FakeOpenAIServer(lambda r: "ok.") as server:
        jobs = [
            spawn.Process(target=_sender, args=(str(path), server.url, rpm, count)) for _ in "ab"
        ]
        for job in jobs:
            job.start()
        for job in jobs:
            job.join(timeout=60)
        times = sorted(start for start, _ in server.intervals)
    assert [job.exitcode for job in jobs] == [0, 0] and len(times) == 2 * count
    for i, first in enumerate(times):  # any stretch holds at most the burst + the refill
        for j in range(i, len(times)):
            assert j - i + 1 <= 10 + rpm / 60 * (times[j] - first) + 1, (i, j, times[j] - first)
    assert times[-1] - times[0] >= (2 * count - 10) / 10 - 0.1


def _gateway(url: str, ledger: Path, name: str) -> Gateway:
    spec = ModelSpec(
        name=name,
        model="openai/m",
        api_base=url,
        context_window=8192,
        rpm=600,
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.01),
    )
    return Gateway(spec, CallLog(None, budget=Budget(None, None, str(ledger))), cache=None)


def test_a_429_with_retry_after_pauses_the_other_job_too(tmp_path: Path) -> None:
    """Job A's first request gets a 429 (Retry-After: 1); job B sends all along meanwhile.

    The pause starts when A's gateway learns of the 429 (litellm may take a while to raise
    it): from then until Retry-After has passed, the server sees no request from either job.
    """
    arrivals: list[float] = []

    def answer(request: dict[str, Any]) -> str | FakeReply:
        arrivals.append(time.time())
        if "job a" in str(request["messages"]) and len(arrivals) and not refused:
            refused.append(arrivals[-1])
            return FakeReply(status=429, headers={"Retry-After": "1"})
        return "ok."

    refused: list[float] = []
    ledger = tmp_path / "spend.json"
    with FakeOpenAIServer(answer) as server:
        a, b = _gateway(server.url, ledger, "a"), _gateway(server.url, ledger, "b")
        assert a.rate is not b.rate  # two jobs: they share the file only
        stop = threading.Event()

        def job_b() -> None:
            for i in range(1000):
                if stop.is_set():
                    return
                b.complete(f"job b {i}", max_tokens=5)

        other = threading.Thread(target=job_b)
        other.start()
        time.sleep(0.2)
        a.complete("job a", max_tokens=5)
        stop.set()
        other.join(timeout=10)
    until = json.loads(endpoint_file(tmp_path, ("openai/m", server.url)).read_text())["pause"]
    learnt = until - 1.0
    assert refused and learnt >= refused[0]
    during = [t - learnt for t in arrivals if learnt + 0.05 < t < until]
    assert during == []  # nothing from either job (50 ms for a request already on its way)
    assert len([t for t in arrivals if t >= until]) >= 2  # A's retry, and B went on


def test_the_limits_are_checked_and_left_out_of_the_fingerprint() -> None:
    assert {"rpm", "tpm", "input_tpm", "output_tpm"} <= set(NOT_IN_FINGERPRINT)
    cases = {
        "model.rpm=0": "model.rpm=0 is out of range: at least 1, or null for no limit; "
        "e.g. model.rpm=500",
        "judge.tpm=-5": "judge.tpm=-5 is out of range: at least 1, or null for no limit; "
        "e.g. judge.tpm=500",
        "model.input_tpm=1.5": "model.input_tpm=1.5 must be a whole number (or null)",
        "model.output_tpm=lots": "model.output_tpm=lots must be a whole number (or null)",
    }
    for override, message in cases.items():
        with pytest.raises(ConfigError) as err:
            build_run_config(composed(override, "metrics=paper"), (override,))
        assert str(err.value) == message
    config = build_run_config(composed("model.rpm=120", "metrics=paper"), ("model.rpm=120",))
    assert config.roles["model"].rpm == config.roles["judge"].rpm == 120  # judge=same shares it


class _Handle:
    def __init__(self, keeper: BucketKeeper, dead: list[bool]) -> None:
        self.keeper, self.dead = keeper, dead

    def __getattr__(self, method: str) -> Any:
        def remote(*args: Any) -> Any:
            if self.dead:
                raise _FakeRay.exceptions.RayActorError()
            return getattr(self.keeper, method)(*args)

        return type("Method", (), {"remote": staticmethod(remote)})()


class _FakeRay:
    """Just enough of Ray's API (named actors) to run RayStore without a cluster."""

    class exceptions:  # noqa: N801 (Ray's module name)
        class RayActorError(Exception):
            pass

    def __init__(self) -> None:
        self.actors: dict[str, _Handle] = {}

    def remote(self, **_: Any) -> Any:
        ray = self

        class Remote:
            def __init__(self, cls: type) -> None:
                self.cls, self.opts = cls, {}

            def options(self, **opts: Any) -> Remote:
                self.opts = opts
                return self

            def remote(self, *args: Any) -> _Handle:
                assert self.opts["get_if_exists"] and self.opts["namespace"]
                name = self.opts["name"]
                if name not in ray.actors or ray.actors[name].dead:
                    ray.actors[name] = _Handle(self.cls(*args), [])
                return ray.actors[name]

        return Remote

    def get(self, value: Any) -> Any:
        return value


def test_a_ray_sweep_shares_one_named_actor_per_endpoint_and_recreates_a_lost_one() -> None:
    ray, allowance = _FakeRay(), Allowance(rpm=60)
    name = actor_name("/sweeps/x", ("openai/m", ""))
    first, second = RayStore(ray, name, allowance), RayStore(ray, name, allowance)
    assert first.reserve({"rpm": 1})[0] == 0.0
    assert second.reserve({"rpm": 1})[0] == pytest.approx(1.0, abs=0.05)  # the same bucket
    ray.actors[name].dead.append(True)  # the worker that owned the actor went away
    assert second.reserve({"rpm": 1})[0] == 0.0  # a new actor, full again
    assert actor_name("/sweeps/y", ("openai/m", "")) != name
