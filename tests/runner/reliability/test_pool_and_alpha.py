"""A judged item's samples pooled by kind, and Krippendorff's alpha among them.

Alpha is checked against Krippendorff's own worked example ("Computing Krippendorff's
Alpha-Reliability", 2011, section C: 4 observers, 12 units, missing values), whose published
values are 0.743 (nominal), 0.815 (ordinal) and 0.849 (interval).
"""

from __future__ import annotations

import math

import pytest

from runner.api.types import MetricResult
from runner.api.value import Value
from runner.reliability.agreement import alpha
from runner.reliability.samples import pool, pooled

N = math.nan
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


@pytest.mark.parametrize(
    ("kind", "published", "level"),
    [("label", 0.743, "nominal"), ("ordinal", 0.815, "ordinal"), ("number", 0.849, "interval")],
)
def test_alpha_gives_krippendorffs_worked_example(kind: str, published: float, level: str) -> None:
    found = alpha(KRIPPENDORFF_2011, kind)
    assert round(found.alpha, 3) == published and found.level == level
    assert found.units == 11  # unit 12 has one value: nothing to pair
    assert -1 <= found.low <= found.alpha <= found.high <= 1


def test_alpha_is_undefined_when_every_sample_agrees_or_nothing_pairs() -> None:
    assert alpha([[1, 0, 1], [1, 0, 1]], "label").alpha == 1.0
    assert math.isnan(alpha([[3, 3], [3, 3]], "number").alpha)  # one value: no disagreement scale
    assert math.isnan(alpha([[1, N], [N, 2]], "number").alpha)  # no document with two samples


def test_a_number_is_the_mean_of_its_decided_samples() -> None:
    assert pooled([2.0, 4.0, N], "number") == (3.0, "")
    assert pooled([1.0, 2.0], "ordinal") == (1.5, "")
    value, note = pooled([N, N], "number")
    assert math.isnan(value) and note == ""


def test_a_label_is_the_majority_and_a_tie_is_undecided_and_said() -> None:
    assert pooled([1.0, 0.0, 1.0], "label") == (1.0, "")
    value, note = pooled([1.0, 0.0, N, N], "label")
    assert math.isnan(value) and note == "the 4 samples tie between 0 and 1; undecided"


def test_pool_keeps_the_first_samples_artifacts_and_notes_the_tie() -> None:
    results = [
        MetricResult({"faithful": 1.0, "share": 0.5}, {"claims.json": ["first"]}),
        MetricResult({"faithful": 0.0, "share": 1.0}, {"claims.json": ["second"]}),
    ]
    facts = {"faithful": Value(kind="label")}  # share undeclared: a number
    found = pool("fab", results, facts)
    assert math.isnan(found.values["faithful"]) and found.values["share"] == 0.75
    assert found.artifacts == {"claims.json": ["first"]}
    assert found.notes == ("fab/faithful: the 2 samples tie between 0 and 1; undecided",)
