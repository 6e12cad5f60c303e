"""Small numbers stay readable: a ratio of 0.0183 is not '0.02' on the console nor in a table.

The expected strings are written out by hand from the rule (3 significant digits below 1,
2 decimals above, whole numbers whole), not produced by the code under test.
"""

from __future__ import annotations

import math

import pytest

from runner.report.format import cell_text, decimals, readable
from runner.report.layout import Layout
from runner.report.table import Estimate, Table


@pytest.mark.parametrize(
    "value,text",
    [
        (0.0183, "0.0183"),
        (0.5, "0.500"),
        (0.123456, "0.123"),
        (73.8273, "73.83"),
        (1234.5, "1234.50"),
        (0.0, "0"),
        (12.0, "12"),
        (-0.0183, "-0.0183"),
        (0.00001234, "1.23e-05"),
        (math.nan, "nan"),
    ],
)
def test_readable(value: float, text: str) -> None:
    assert readable(value) == text


def _table(cells: dict[str, list[Estimate]]) -> Table:
    return Table(
        layout=Layout((), ("strategy",), (), ()),
        metrics=tuple(cells),
        rows=((),),
        columns=tuple((f"s{i}",) for i in range(max(len(v) for v in cells.values()))),
        cells={((), (f"s{i}",), m): e for m, es in cells.items() for i, e in enumerate(es)},
        per_run=frozenset(),
        confidence=0.95,
        resamples=1000,
        seed=0,
    )


def test_a_table_column_of_small_ratios_keeps_three_significant_digits() -> None:
    ratio = Estimate(0.0183, 0.0151, 0.0210, 5, 1)
    table = _table(
        {
            "m/ratio": [ratio, Estimate(0.0090, 0.0080, 0.0100, 5, 1)],
            "m/calls": [Estimate(12.0, 12.0, 12.0, 1, 1), Estimate(3.0, 3.0, 3.0, 1, 1)],
            "m/score": [Estimate(73.8273, 70.1, 77.9, 5, 1)],
            "m/share": [Estimate(0.5, 0.25, 0.75, 5, 1)],
        }
    )
    assert decimals(table, "m/ratio") == 4
    assert cell_text(ratio, decimals(table, "m/ratio")) == ("0.0183", "[0.0151, 0.0210]")
    assert decimals(table, "m/calls") == 0  # whole numbers stay whole
    assert decimals(table, "m/score") == 1  # the table's column rule for larger values
    assert cell_text(table.cell((), ("s0",), "m/share"), decimals(table, "m/share")) == (
        "0.500",
        "[0.250, 0.750]",
    )
