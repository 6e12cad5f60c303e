"""PPI (report ppi=true): people's labels anchor a judge's values on every document.

``runner.api.meta.anchored_mean`` is checked against ``ppi_py``'s own functions on the same
arrays (at the report's 95%, not ppi_py's default 90%), and against what PPI promises: a
biased judge's bias corrected, an accurate judge worth more labels than people gave.
"""

from __future__ import annotations

from pathlib import Path

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


def test_people_s_scores_of_a_few_summaries_anchor_the_judge_s_numbers(tmp_path: Path) -> None:
    """Numbers: people's BooookScore per summary (as ratings) on 5 of a run's 12 summaries."""
    import csv

    from runner.human.judgments import Rating
    from runner.human.record import record_human_run
    from runner.report.config import ReportConfig
    from runner.report.make import make_report
    from runner.tracking.writer import Tracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    judge = {f"d{i}": 60.0 + 3 * i for i in range(12)}
    tracker = Tracker(uri, "scored")
    run_id = tracker.start("judged", {})
    tracker.log_params({"strategy": "hier"})
    tracker.log_json({d: {"booookscore/score": v} for d, v in judge.items()}, "scores.json")
    tracker.log_json({d: f"Summary of {d}." for d in judge}, "summaries.json")
    tracker.finish("FINISHED")
    people = {"d0": 50.0, "d3": 62.0, "d5": 70.0, "d8": 75.0, "d11": 90.0}
    ratings = [Rating(d, run_id, "booookscore/score", v, "ann") for d, v in people.items()]
    record_human_run(uri, "scored", ratings, "ratings.csv")
    out = tmp_path / "out"
    make_report(ReportConfig(uri=uri, experiment="scored", out=out, resamples=100, ppi=True))
    with (out / "meta_ppi_summaries.csv").open(encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    expected = anchored_mean(
        list(people.values()),
        [judge[d] for d in people],
        [v for d, v in judge.items() if d not in people],
        0.95,
    )
    assert (row["value"], row["people's scores"], row["judged"]) == ("booookscore/score", "5", "12")
    assert float(row["mean (PPI++)"]) == pytest.approx(expected.ppi.value, abs=0.05)
    assert float(row["mean (judge only)"]) == pytest.approx(sum(judge.values()) / 12, abs=0.05)


def test_labels_worth_is_na_where_an_interval_has_no_width() -> None:
    """People who all gave 1 leave the classical interval no width: the ratio is undefined,
    not 0 ("worthless") nor inf ("priceless"), and the cell says n/a."""
    from runner.api.meta import anchored_mean, labels_worth

    found = anchored_mean([1.0] * 4, [1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0], 0.95)
    assert found.classical.low == found.classical.high == 1.0
    assert found.worth != found.worth and labels_worth(found.worth) == "n/a"  # NaN
    assert labels_worth(21.94) == 22
