"""Every cell's interval is of the quantity its point is, so the point lies inside it.

A panel's cell once read 0.865 [0.708, 0.837]: its point was the members' majority per
document (as the job pools them), its interval the two-stage bootstrap of the members'
labels, centred on their mean. Here each cell kind (a label or a number; judged once, sampled
by one judge, a panel) is built from documents whose members disagree in the same way, and
the point is checked against its interval and against the pooling done independently here.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter

import pytest

from runner.plugins.values import tag
from runner.report.layout import Layout
from runner.report.table import build_table
from runner.tracking.reader import RunRecord

DOCS = [f"d{i:02d}" for i in range(40)]
# Three members' labels per document: 2 of 3 say faithful on most documents, so the
# majority (1) is far above the members' mean (2/3).
LABELS = [(1.0, 1.0, 0.0) if i % 8 else (0.0, 0.0, 1.0) for i in range(len(DOCS))]
NUMBERS = [(4.0, 5.0, 1.0) if i % 8 else (2.0, 1.0, 1.0) for i in range(len(DOCS))]
JUDGES = ("a", "b", "c")


def _majority(labels: tuple[float, ...]) -> float:
    return Counter(labels).most_common(1)[0][0]


def _run(name: str, judges: tuple[str, ...]) -> RunRecord:
    declared = json.dumps({"faithful": {"kind": "label"}, "rating": {"kind": "number"}})
    params = {"strategy": name, "judges": ",".join(judges)}
    return RunRecord(name * 32, name, "1", "FINISHED", 0, 1, params, {}, {tag("m"): declared})


@pytest.mark.parametrize("who", ["panel", "samples"])
def test_a_sampled_or_panel_cell_lies_around_its_own_point(who: str) -> None:
    # "panel": members a, b, c once each; "samples": one judge ('') asked three times.
    names = JUDGES if who == "panel" else ("", "", "")
    run = _run("x", JUDGES if who == "panel" else ())
    scores = {
        run.run_id: {
            doc: {
                "m/faithful": _majority(labels),
                "m/rating": statistics.mean(numbers),
                "m/once": float(i % 3 == 0),
            }
            for i, (doc, labels, numbers) in enumerate(zip(DOCS, LABELS, NUMBERS, strict=True))
        }
    }
    samples = {
        run.run_id: {
            doc: {
                "m/faithful": list(zip(names, labels, strict=True)),
                "m/rating": list(zip(names, numbers, strict=True)),
            }
            for doc, labels, numbers in zip(DOCS, LABELS, NUMBERS, strict=True)
        }
    }
    layout = Layout(rows=(), columns=("strategy",), implied=(), pooled=())
    table = build_table(
        [run], scores, layout, ["m/faithful", "m/rating", "m/once"],
        resamples=1000, confidence=0.95, seed=0, samples=samples,
    )  # fmt: skip
    for metric in ("m/faithful", "m/rating", "m/once"):
        cell = table.cell((), ("x",), metric)
        assert cell is not None
        assert cell.low <= cell.mean <= cell.high, (who, metric, cell)
    faithful = table.cell((), ("x",), "m/faithful")
    assert faithful is not None
    assert faithful.mean == pytest.approx(statistics.mean(_majority(x) for x in LABELS))  # 0.875
    members_mean = statistics.mean(v for x in LABELS for v in x)  # 0.625, outside the interval
    assert not faithful.low <= members_mean <= faithful.high
    assert not faithful.clustered
    rating = table.cell((), ("x",), "m/rating")
    assert rating is not None and rating.clustered == (who == "samples")
