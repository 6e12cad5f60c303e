"""PPI (report ppi=true): people's labels anchor a judge's values on every document.

``runner.api.meta.anchored_mean`` is checked against ``ppi_py``'s own functions on the same
arrays (at the report's 95%, not ppi_py's default 90%), and against what PPI promises: a
biased judge's bias corrected, an accurate judge worth more labels than people gave.
"""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci

from runner.api.errors import DataError
from runner.api.meta import anchored_mean


def _study(bias: float, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """People's values on 40 documents, the judge's on them and on 400 others."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(3.0, 1.0, 440)
    judge = truth + bias + rng.normal(0.0, noise, 440)
    return truth[:40], judge[:40], judge[40:]


def test_it_is_ppi_pys_estimate_at_95_percent() -> None:
    people, judged, elsewhere = _study(bias=0.5, noise=0.3)
    found = anchored_mean(people, judged, elsewhere, 0.95)
    low, high = ppi_mean_ci(people, judged, elsewhere, alpha=0.05)
    c_low, c_high = classical_mean_ci(people, alpha=0.05)
    assert (found.ppi.low, found.ppi.high) == pytest.approx((float(low[0]), float(high[0])))
    assert (found.classical.low, found.classical.high) == pytest.approx((c_low, c_high))
    assert found.ppi.n == 40 and found.judged == 440
    default_low, default_high = ppi_mean_ci(people, judged, elsewhere)  # ppi_py's 90%
    assert found.ppi.high - found.ppi.low > float(default_high[0] - default_low[0])


def test_a_biased_judge_is_corrected_and_an_accurate_one_is_worth_more_labels() -> None:
    people, judged, elsewhere = _study(bias=0.5, noise=0.3)
    truth = 3.0
    found = anchored_mean(people, judged, elsewhere, 0.95)
    assert found.judge_only == pytest.approx(truth + 0.5, abs=0.15)  # the judge's bias
    assert found.ppi.low <= truth <= found.ppi.high
    assert found.ppi.high - found.ppi.low < found.classical.high - found.classical.low
    assert found.worth > 3 * 40  # a judge this close to people is worth many labels


def test_a_useless_judge_costs_nothing_but_helps_nothing() -> None:
    people, _, _ = _study(bias=0.0, noise=0.0)
    rng = np.random.default_rng(1)
    found = anchored_mean(people, rng.normal(0, 1, 40), rng.normal(0, 1, 400), 0.95)
    ratio = (found.ppi.high - found.ppi.low) / (found.classical.high - found.classical.low)
    assert ratio == pytest.approx(1.0, abs=0.1)  # PPI++ tunes the judge's weight to ~0


def test_fewer_than_two_labels_is_one_line() -> None:
    with pytest.raises(DataError) as raised:
        anchored_mean([1.0], [1.0], [0.0, 1.0], 0.95)
    assert str(raised.value).startswith("PPI needs two or more documents people labelled")
    assert "\n" not in str(raised.value)
