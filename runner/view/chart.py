"""An inline SVG line chart for the viewer, computed in Python.

The page loads no script library; the charts are incremental's summary length over the
chunks and SummIt's score over the iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.view.steps import fact_text


@dataclass(frozen=True)
class Chart:
    """An inline SVG line chart, already in pixel coordinates."""

    width: int
    height: int
    series: list[tuple[str, str, str]]
    """(name, css class, "x,y x,y ..." polyline points)."""
    dots: list[tuple[float, float, str]]
    """(x, y, tooltip) of every plotted value."""
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    x_label: str
    y_label: str


def line_chart(
    series: list[tuple[str, str, list[tuple[float, float | None]]]],
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] | None = None,
) -> Chart:
    """Series of (x, y) values (y None = not drawn) scaled into a 560x190 SVG box."""
    width, height, left, bottom, top, right = 560, 190, 44, 30, 12, 14
    xs = [x for _, _, values in series for x, _ in values]
    ys = [y for _, _, values in series for _, y in values if y is not None]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = y_range or (0.0, max(ys) if ys else 1.0)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)

    def px(x: float, y: float) -> tuple[float, float]:
        return (
            round(left + (x - x0) / (x1 - x0) * (width - left - right), 1),
            round(height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom), 1),
        )

    lines, dots = [], []
    for name, css, values in series:
        points = [(px(x, y), y) for x, y in values if y is not None]
        lines.append((name, css, " ".join(f"{p[0]},{p[1]}" for p, _ in points)))
        dots += [(p[0], p[1], f"{name}: {fact_text(y)}") for p, y in points]
    x_ticks = [(px(x, y0)[0], fact_text(x)) for x in sorted(set(xs))][:40]
    y_ticks = [
        (px(x0, y0 + (y1 - y0) * i / 4)[1], f"{y0 + (y1 - y0) * i / 4:.3g}") for i in range(5)
    ]
    return Chart(width, height, lines, dots, x_ticks, y_ticks, x_label, y_label)
