"""The report's settings (``conf/report.yaml``) as a validated, typed ``ReportConfig``.

Kept apart from the Hydra entry so that tests and scripts build a report from plain values,
and so that a bad value is a one-line ``ConfigError`` before MLflow is even imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from runner.api.errors import ConfigError


def _conf() -> dict[str, Any]:
    """``conf/report.yaml``: the default columns and figure, written in one place.

    Read here too so that a report built from plain values (tests, scripts) has the same
    columns and figures as ``python -m runner.report``.
    """
    text = (resources.files("runner.conf") / "report.yaml").read_text(encoding="utf-8")
    found = yaml.safe_load(text)
    assert isinstance(found, dict)
    return found


DEFAULT_METRICS = tuple(str(key) for key in _conf()["metric_keys"])
DEFAULT_SCATTER = (str(_conf()["scatter"]["x"]), str(_conf()["scatter"]["y"]))
"""The score-against-length figure's (x, y) metrics."""
SETTINGS = (
    "tracking.uri",
    "tracking.experiment",
    "sweep",
    "out",
    "metric_keys",
    "columns",
    "rows",
    "resamples",
    "confidence",
    "seed",
    "plots",
    "scatter",
    "meta",
    "ppi",
)


@dataclass(frozen=True)
class ReportConfig:
    """``conf/report.yaml``, validated (see the comments there)."""

    uri: str
    """MLflow tracking URI."""
    experiment: str
    """MLflow experiment name."""
    sweep: str | None = None
    """Parent run id (or name) of the sweep; None = the latest sweep, or all runs if none."""
    out: Path | None = None
    """Output folder; None = reports/<experiment>-<sweep id or 'all'> under the current folder."""
    metrics: tuple[str, ...] = DEFAULT_METRICS
    """Metric names, in column order; those no selected run has are skipped with a note."""
    headline: bool | None = None
    """Add the headline metrics the runs recorded (tag ``runner.headline``) after ``metrics``:
    None = when ``metrics`` is the paper's default (``metric_keys`` not given), so a run's own
    metric shows without being named; True = always; False = never."""
    columns: tuple[str, ...] | None = None
    """Column keys; None = ('strategy',) when it varies."""
    rows: tuple[str, ...] | None = None
    """Row keys; None = the other varying params that tell configurations apart."""
    resamples: int = 1000
    """Bootstrap resamples per cell."""
    confidence: float = 0.95
    """Interval coverage."""
    seed: int = 0
    """Seed of the bootstrap."""
    plots: bool = True
    """Draw the figures."""
    scatter_x: str = DEFAULT_SCATTER[0]
    """The score-against-length figure's x metric (the paper's length)."""
    scatter_y: str = DEFAULT_SCATTER[1]
    """Its y metric (the paper's BooookScore)."""
    meta: bool | None = None
    """Meta-evaluation tables (``runner.report.meta.make``): None = when the experiment has
    a human run, True = always (an error without one), False = never."""
    ppi: bool = False
    """Prediction-powered estimates of each value people labelled (``ppi=true``): a
    ``meta_ppi_*`` table per metric that declares one, beside the meta-evaluation."""

    @property
    def scatter(self) -> tuple[str, str]:
        """The score-against-length figure's (x, y) metrics."""
        return self.scatter_x, self.scatter_y

    @property
    def adds_headline(self) -> bool:
        """True when the table adds the runs' recorded headline metrics (see ``headline``)."""
        return self.metrics == DEFAULT_METRICS if self.headline is None else self.headline


def _keys(name: str, value: Any, *, allow_none: bool) -> tuple[str, ...] | None:
    """A list of non-empty strings (a single string counts as a list of one)."""
    if value is None and allow_none:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise ConfigError(f"{name}={value} must be a list of names; e.g. {name}=[model,chunk]")
    return tuple(items)


def build_report_config(raw: dict[str, Any]) -> ReportConfig:
    """Validate the composed ``report`` config (a plain dict) into a ``ReportConfig``."""
    from runner.tracking.store import default_tracking_uri

    unknown = sorted(set(raw) - {s.split(".")[0] for s in SETTINGS})
    tracking = raw.get("tracking") or {}
    unknown += sorted(f"tracking.{k}" for k in set(tracking) - {"uri", "experiment"})
    if unknown:
        raise ConfigError(f"{unknown[0]} is not a report setting; valid: {', '.join(SETTINGS)}")
    resamples, confidence, seed = raw.get("resamples"), raw.get("confidence"), raw.get("seed")
    if not isinstance(resamples, int) or isinstance(resamples, bool) or resamples < 100:
        raise ConfigError(
            f"resamples={resamples} must be a whole number >= 100; try resamples=1000"
        )
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not 0 < confidence < 1
    ):
        raise ConfigError(f"confidence={confidence} must be between 0 and 1; try confidence=0.95")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"seed={seed} must be a whole number; try seed=0")
    if not isinstance(raw.get("plots"), bool):
        raise ConfigError(f"plots={raw.get('plots')} must be true or false")
    meta = raw.get("meta")
    if meta is not None and not isinstance(meta, bool):
        raise ConfigError(
            f"meta={meta} must be true, false or null (null: when there are human runs)"
        )
    ppi = raw.get("ppi", False)
    if not isinstance(ppi, bool):
        raise ConfigError(f"ppi={ppi} must be true or false")
    if ppi and meta is False:
        raise ConfigError(
            "ppi=true anchors the judge on people's labels, which meta=false leaves unread; "
            "drop meta=false"
        )
    given = raw.get("metric_keys")  # null: the paper's columns and the runs' headline metrics
    metrics = DEFAULT_METRICS if given is None else _keys("metric_keys", given, allow_none=False)
    if not metrics:
        raise ConfigError("metric_keys=[] names no metric; e.g. metric_keys=[booookscore/score]")
    sweep, out = raw.get("sweep"), raw.get("out")
    scatter = raw.get("scatter")
    if scatter is None:  # a config built in code, not composed from conf/report.yaml
        scatter = dict(zip(("x", "y"), DEFAULT_SCATTER, strict=True))
    axes = (scatter.get("x"), scatter.get("y")) if isinstance(scatter, dict) else (None, None)
    if not all(isinstance(a, str) and a for a in axes) or set(scatter) - {"x", "y"}:
        raise ConfigError(
            f"scatter={scatter} must name two metrics, x and y; "
            "e.g. scatter.x=stats/length_tokens scatter.y=booookscore/score"
        )
    return ReportConfig(
        uri=str(tracking.get("uri") or default_tracking_uri()),
        experiment=str(tracking.get("experiment") or "summarization"),
        sweep=None if sweep is None else str(sweep),
        out=None if out is None else Path(str(out)).expanduser(),
        metrics=metrics,
        columns=_keys("columns", raw.get("columns"), allow_none=True),
        rows=_keys("rows", raw.get("rows"), allow_none=True),
        resamples=resamples,
        confidence=float(confidence),
        seed=seed,
        plots=raw["plots"],
        scatter_x=str(axes[0]),
        scatter_y=str(axes[1]),
        meta=True if ppi else meta,
        ppi=ppi,
    )
