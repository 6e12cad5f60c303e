"""The faithfulness metric's estimate hook: the judge's calls per summary, counted by hand.

binary is one call, cot two, claims one per given claim (rounds: the claims over the judge's
concurrency), and without given claims one extraction call plus the guessed claim count. The
hook is called as the core calls it (``run_estimate``): the parameters a test leaves out are
``setup``'s defaults.
"""

from __future__ import annotations

import math
from pathlib import Path

import metrics.faithfulness as faithfulness
from runner.api import Document, Message, MetricEstimateInput, Phase, count_tokens, run_estimate


class FixedGuide:
    """A Guide with nothing measured: every guess at its point, no retries, no cache."""

    def __init__(self, concurrency: int) -> None:
        self._concurrency = concurrency

    @property
    def concurrency(self) -> int:
        return self._concurrency

    def fill(self, purpose: str) -> float:
        return 0.5

    def completion(
        self, purpose: str, default: float, what: str, cap: float | None = None
    ) -> float:
        return default

    def retries(self, purpose: str) -> float:
        return 0.0

    def measured(self, purpose: str) -> bool:
        return False

    def calls(self, purpose: str) -> int:
        return 0

    def pick(self, what: str, point: float, cheap: float, dear: float, text: str) -> float:
        return point

    def cached(
        self, prompt: str | list[Message], max_tokens: int, stop: tuple[str, ...] = ()
    ) -> bool:
        return False


def _prompt(relative: str) -> Path | None:
    return None


def _estimate(
    summary: str | None,
    expected: float,
    guide: FixedGuide,
    method: str,
    extras: dict[str, object] | None = None,
    document: Document | None = None,
) -> list[Phase]:
    inputs = MetricEstimateInput(
        summary, expected, {"judge": guide}, _prompt, {"method": method}, document, extras or {}
    )
    phases = run_estimate(faithfulness, inputs)
    assert phases is not None
    return phases


def _calls(
    method: str, concurrency: int = 4, extras: dict[str, object] | None = None
) -> tuple[float, float]:
    phases = _estimate(
        "The keeper lit the lantern. The ship came home.",
        100.0,
        FixedGuide(concurrency),
        method,
        extras,
    )
    assert all(p.role == "judge" for p in phases)
    return sum(p.calls for p in phases), sum(p.rounds for p in phases)


def test_binary_is_one_call_and_cot_two() -> None:
    assert _calls("binary") == (1.0, 1.0)
    assert _calls("cot") == (2.0, 2.0)


def test_claims_given_by_the_data_are_one_call_each_in_rounds_of_the_concurrency() -> None:
    claims = tuple(f"Claim {i}." for i in range(10))
    calls, rounds = _calls("claims", concurrency=4, extras={"claims": claims})
    assert calls == 10.0 and rounds == math.ceil(10 / 4)


def test_claims_not_given_add_the_extraction_call_to_a_guessed_count() -> None:
    calls, rounds = _calls("claims", concurrency=100, extras={})
    assert calls >= 2.0  # the extraction call and at least one claim
    assert rounds == 2.0  # extraction, then every claim at once
    phases = _estimate(None, 150.0, FixedGuide(1), "claims", {})
    claim_calls = [p.calls for p in phases if p.purpose == "faithfulness.claim"]
    assert claim_calls == [150.0 / 15.0]  # the expected summary over ~15 tokens a claim


def test_the_source_given_is_counted_in_every_call_instead_of_the_guess() -> None:
    """Two sources whose token counts differ by a known amount move each call's prompt by it."""
    summary = "The keeper lit the lantern."
    short, long = "Word " * 100, "Word " * 1100
    extra = count_tokens(long) - count_tokens(short)
    claims = ("The keeper lit the lantern.", "The ship came home.", "It rained.")

    def prompts(method: str, text: str) -> float:
        phases = _estimate(
            summary, 100.0, FixedGuide(4), method, {"claims": claims}, Document("d", text)
        )
        return sum(p.prompt_tokens for p in phases)

    assert prompts("binary", long) - prompts("binary", short) == extra
    assert prompts("cot", long) - prompts("cot", short) == 2 * extra
    assert prompts("claims", long) - prompts("claims", short) == len(claims) * extra
