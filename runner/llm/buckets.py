"""The arithmetic of provider rate limits: an endpoint's allowance and its token buckets.

Plain numbers and a JSON-able state, no clock of its own: the stores of ``runner/llm/rate.py``
(memory, a file under ``flock``) and the Ray actor of ``runner/llm/rate_ray.py`` keep the
state and give the time, and the tests give a fake one. See ``runner/llm/rate.py`` for why
the buckets hold one second and may go below zero.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from runner.llm.spec import RATE_KEYS, ModelSpec

BURST_S = 1.0
"""A bucket holds this many seconds of its allowance: providers may enforce a minute's limit
over shorter periods (OpenAI: 'quantized'), so a sweep never sends a minute's worth at once."""


@dataclass(frozen=True)
class Allowance:
    """An endpoint's limits per minute (None: no limit)."""

    rpm: int | None = None
    """Requests per minute."""
    tpm: int | None = None
    """Prompt plus completion tokens per minute."""
    input_tpm: int | None = None
    """Prompt tokens per minute."""
    output_tpm: int | None = None
    """Completion tokens per minute."""

    @classmethod
    def of(cls, spec: ModelSpec) -> Allowance:
        """The limits a model's config sets."""
        return cls(**{key: getattr(spec, key) for key in RATE_KEYS})

    def merged(self, other: Allowance) -> Allowance:
        """The stricter of two roles' limits on one endpoint."""
        values = {}
        for key in RATE_KEYS:
            mine, theirs = getattr(self, key), getattr(other, key)
            values[key] = (
                min(v for v in (mine, theirs) if v is not None) if (mine or theirs) else None
            )
        return Allowance(**values)

    def per_second(self) -> dict[str, float]:
        """The refill rate of each limit that is set."""
        return {f.name: getattr(self, f.name) / 60.0 for f in fields(self) if getattr(self, f.name)}

    @property
    def counts_tokens(self) -> bool:
        """True when a request's prompt must be counted before it is sent."""
        return bool(self.tpm or self.input_tpm)


def refill(per_minute: float, cap: float) -> float:
    """The refill per second that keeps any 60 s at or under ``per_minute``.

    A token bucket sends at most its capacity plus a minute's refill in any minute: a full
    bucket (one second's worth, at least one request) and then 60 s of refilling at the
    allowance let ``per_minute + cap`` requests through, one too many for a provider that
    counts a sliding 60-s window (rpm=20: a 21st request, answered 429). So the bucket refills
    at the allowance less its capacity per minute (rpm=20: 19 a minute after the first),
    never below half the allowance (rpm=1: one request every two minutes, not none).
    """
    return max(per_minute - cap, per_minute / 2.0) / 60.0


class Buckets:
    """The buckets of one endpoint: plain arithmetic on a state that can be saved as JSON.

    ``at`` is when the buckets were last refilled; after a 429 it lies ahead, at the end of
    the pause, so nothing refills while the provider is refusing. ``shifted`` adds up how far
    pauses have pushed the schedule: a request that reserved its time before a pause goes
    that much later (the pause delays the queue, it does not gather it into one burst).
    """

    def __init__(self, allowance: Allowance, state: dict[str, Any] | None, now: float) -> None:
        """Buckets from a saved ``state``, or full ones at ``now``."""
        per_minute = {name: rate * 60.0 for name, rate in allowance.per_second().items()}
        self.caps = {name: max(1.0, limit * BURST_S / 60.0) for name, limit in per_minute.items()}
        self.rates = {name: refill(limit, self.caps[name]) for name, limit in per_minute.items()}
        state = state or {}
        saved = state.get("levels") or {}
        self.levels = {name: float(saved.get(name, self.caps[name])) for name in self.rates}
        self.at = float(state.get("at", now))
        self.paused_until = float(state.get("pause", 0.0))
        self.shifted = float(state.get("shift", 0.0))

    def state(self) -> dict[str, Any]:
        """What ``__init__`` reads back."""
        return {
            "levels": self.levels,
            "at": self.at,
            "pause": self.paused_until,
            "shift": self.shifted,
        }

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.at)
        for name, rate in self.rates.items():
            self.levels[name] = min(self.caps[name], self.levels[name] + rate * elapsed)
        self.at = max(self.at, now)

    def reserve(self, costs: dict[str, float], now: float) -> tuple[float, float]:
        """Take ``costs`` now: the seconds to wait before sending, and ``shifted`` now."""
        self._refill(now)
        short = 0.0
        for name, rate in self.rates.items():
            need = min(costs.get(name, 0.0), self.caps[name])
            if self.levels[name] < need:
                short = max(short, (need - self.levels[name]) / rate)
            self.levels[name] -= costs.get(name, 0.0)
        wait = max(self.paused_until - now, self.at - now + short if short else 0.0, 0.0)
        return wait, self.shifted

    def settle(self, deltas: dict[str, float], now: float) -> None:
        """Charge what was not known before the call (a negative delta gives tokens back)."""
        self._refill(now)
        for name in self.rates:
            self.levels[name] = min(self.caps[name], self.levels[name] - deltas.get(name, 0.0))

    def pause(self, seconds: float, now: float) -> None:
        """A 429: nothing is sent before ``now + seconds``, and the buckets are empty till then."""
        self._refill(now)
        until = now + seconds
        if until > self.paused_until:
            self.shifted += max(0.0, until - max(self.at, now))
            self.paused_until = until
            self.at = max(self.at, until)
        for name in self.rates:
            self.levels[name] = min(self.levels[name], 0.0)

    def check(self, now: float) -> tuple[float, float]:
        """Seconds left of a pause (0 when none), and ``shifted``."""
        return max(0.0, self.paused_until - now), self.shifted
