"""The report's interval for a cell whose judge was sampled: documents, then samples within.

Checked against hand computations and against the documents-only bootstrap it extends.
"""

from __future__ import annotations

import random

import pytest

from runner.report.table import bootstrap_ci, cluster_ci, judge_split, variance_split


def test_the_variance_split_by_hand() -> None:
    # document means 2 and 6: between = ((2-4)^2 + (6-4)^2) / 1 = 8;
    # within: var([1, 3]) = var([5, 7]) = 2 (ddof 1).
    assert variance_split([[1.0, 3.0], [5.0, 7.0]]) == (8.0, 2.0)
    between, within = variance_split([[4.0], [6.0]])  # judged once: no within part
    assert between == 2.0 and within != within  # NaN


def test_without_spread_within_documents_it_is_the_documents_bootstrap() -> None:
    rng = random.Random(3)
    values = [rng.gauss(50, 10) for _ in range(40)]
    clusters = [[v, v, v] for v in values]
    low, high = cluster_ci(clusters, resamples=2000, confidence=0.95, seed=1)
    plain = bootstrap_ci(values, resamples=2000, confidence=0.95, seed=1)
    assert high - low == pytest.approx(plain[1] - plain[0], rel=0.15)
    assert low < sum(values) / len(values) < high


def test_a_judge_that_varies_widens_the_interval() -> None:
    rng = random.Random(5)
    centres = [rng.gauss(50, 2) for _ in range(30)]
    steady = [[c, c, c] for c in centres]
    noisy = [[c - 15, c, c + 15] for c in centres]  # the same means, a judge that varies
    low, high = cluster_ci(steady, resamples=2000, confidence=0.95, seed=2)
    wide_low, wide_high = cluster_ci(noisy, resamples=2000, confidence=0.95, seed=2)
    assert wide_high - wide_low > 2 * (high - low)
    assert variance_split(noisy)[1] == pytest.approx(225.0)


def test_the_interval_depends_only_on_the_values_and_the_seed() -> None:
    clusters = [[1.0, 2.0, 2.0], [4.0, 5.0], [3.0]]
    shuffled = [[5.0, 4.0], [3.0], [2.0, 1.0, 2.0]]
    assert cluster_ci(clusters, resamples=500, confidence=0.9, seed=7) == cluster_ci(
        shuffled, resamples=500, confidence=0.9, seed=7
    )


def test_a_panels_members_and_a_judges_samples_are_split_apart() -> None:
    # document 1: judge a says 1, 3 (variance 2), judge b 5, 7 (variance 2); means 2 and 6
    # (variance 8). Document 2: a 4, 4 (0), b 4, 6 (2); means 4 and 5 (variance 0.5).
    clusters = [
        [("a", 1.0), ("a", 3.0), ("b", 5.0), ("b", 7.0)],
        [("a", 4.0), ("a", 4.0), ("b", 4.0), ("b", 6.0)],
    ]
    samples, members = judge_split(clusters)
    assert samples == pytest.approx((2 + 2 + 0 + 2) / 4)
    assert members == pytest.approx((8 + 0.5) / 2)
    once = judge_split([[("a", 1.0), ("b", 2.0)], [("a", 3.0), ("b", 5.0)]])
    assert once[0] != once[0] and once[1] == pytest.approx((0.5 + 2) / 2)  # no samples: NaN
