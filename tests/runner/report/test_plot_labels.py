"""Figure 3's point labels stay readable when configurations land on one spot.

Two models with the same mean length and BooookScore used to get their labels drawn at one
offset, one over the other. The test measures each label's text as the renderer draws it
(matplotlib's own ``Text.get_window_extent``) and checks that no two overlap, while each
still names its own point.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Annotation, Text

from runner.report.config import DEFAULT_SCATTER
from runner.report.layout import Layout
from runner.report.plots import score_vs_length, score_vs_length_figure
from runner.report.table import Estimate, Key, Table

LENGTH, SCORE = DEFAULT_SCATTER  # conf/report.yaml's scatter: x, y

POINTS = {  # (strategy, model): (mean length, mean BooookScore)
    ("hier", "claude"): (500.0, 80.0),
    ("hier", "gpt4"): (500.0, 80.0),  # the same spot as claude
    ("hier", "llama"): (502.0, 80.3),  # nearly
    ("summit", "claude"): (500.0, 80.0),  # the same spot, in the other column
    ("summit", "gpt4"): (900.0, 60.0),  # alone
}


def _table() -> Table:
    cells: dict[tuple[Key, Key, str], Estimate] = {}
    for (strategy, model), (length, score) in POINTS.items():
        cells[((model,), (strategy,), LENGTH)] = Estimate(length, length - 20, length + 20, 4, 1)
        cells[((model,), (strategy,), SCORE)] = Estimate(score, score - 3, score + 3, 4, 1)
    return Table(
        layout=Layout(("model",), ("strategy",), (), ()),
        metrics=(SCORE, LENGTH),
        rows=(("claude",), ("gpt4",), ("llama",)),
        columns=(("hier",), ("summit",)),
        cells=cells,
        per_run=frozenset(),
        confidence=0.95,
        resamples=1000,
        seed=0,
    )


def test_labels_of_coinciding_points_do_not_overlap(tmp_path: Path) -> None:
    figure = score_vs_length_figure(_table(), LENGTH, SCORE)
    assert figure is not None
    renderer = FigureCanvasAgg(figure).get_renderer()  # type: ignore[no-untyped-call]
    figure.draw(renderer)
    (axes,) = figure.axes
    notes = [t for t in axes.texts if isinstance(t, Annotation)]
    named = sorted((n.get_text(), n.xy) for n in notes)
    expected = sorted((model, (x, y)) for (_, model), (x, y) in POINTS.items())
    assert named == expected  # one label per point, at its point
    boxes = [(n.get_text(), Text.get_window_extent(n, renderer)) for n in notes]
    for (a, box_a), (b, box_b) in combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"labels {a!r} and {b!r} overlap"
    same_spot = [box for text, box in boxes if text in ("claude", "gpt4")][:3]
    assert len({round(box.y0) for box in same_spot}) == len(same_spot)  # stacked, not merged
    height = max(box.height for _, box in boxes)
    for note, (_, box) in zip(notes, boxes, strict=True):  # each stays near its point
        x, y = axes.transData.transform(note.xy)
        assert abs(box.y0 - y) < 4 * height and 0 <= box.x0 - x < 4 * height, note.get_text()
    assert (
        score_vs_length(_table(), tmp_path / "svl.png", LENGTH, SCORE).path == tmp_path / "svl.png"
    )


def test_a_lone_point_keeps_its_label_beside_it() -> None:
    figure = score_vs_length_figure(_table(), LENGTH, SCORE)
    assert figure is not None
    (axes,) = figure.axes
    (lone,) = [t for t in axes.texts if isinstance(t, Annotation) and t.xy == (900.0, 60.0)]
    assert lone.get_text() == "gpt4" and lone.xyann == (5, 4.0) and lone.arrow_patch is None
