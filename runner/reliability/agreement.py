"""Krippendorff's alpha among a judge's samples, with a bootstrap CI over documents.

The reliability data is one row per sample and one column per document (a unit); a sample
that decided nothing is a missing value. The level of measurement is the one the value's
declared kind implies: ``label`` nominal, ``ordinal`` ordinal, ``number`` and ``count``
interval. Alpha is computed by the ``krippendorff`` package. Its CI is the percentile
bootstrap over documents (units resampled with replacement, ``Boot``'s defaults), the
resamples in which alpha is undefined (every value alike) left out.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

LEVELS = {"label": "nominal", "ordinal": "ordinal", "number": "interval", "count": "interval"}
"""A value's kind -> its level of measurement."""
RESAMPLES = 1000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Alpha:
    """Krippendorff's alpha of one value, and its bootstrap CI (NaN when undefined)."""

    alpha: float
    low: float
    high: float
    units: int
    """Documents with at least two decided samples (the units alpha pairs within)."""
    level: str


def alpha(rows: Sequence[Sequence[float]], kind: str, seed: int = 0) -> Alpha:
    """Alpha of ``rows`` (one per sample, one column per document; NaN missing)."""
    import numpy as np

    level = LEVELS.get(kind, "interval")
    data = np.array(rows, dtype=float)
    paired = int((np.sum(~np.isnan(data), axis=0) >= 2).sum()) if data.size else 0
    point = _alpha(data, level)
    if math.isnan(point):
        return Alpha(point, math.nan, math.nan, paired, level)
    rng = random.Random(seed)
    columns = data.shape[1]
    drawn = []
    for _ in range(RESAMPLES):
        picked = [rng.randrange(columns) for _ in range(columns)]
        value = _alpha(data[:, picked], level)
        if not math.isnan(value):
            drawn.append(value)
    if not drawn:
        return Alpha(point, math.nan, math.nan, paired, level)
    drawn.sort()
    tail = (1 - CONFIDENCE) / 2
    low = drawn[int(tail * (len(drawn) - 1))]
    high = drawn[int(round((1 - tail) * (len(drawn) - 1)))]
    return Alpha(point, low, high, paired, level)


def _alpha(data: object, level: str) -> float:
    """Alpha, or NaN where it is undefined (fewer than two values to pair, one value only)."""
    import krippendorff
    import numpy as np

    array = np.asarray(data, dtype=float)
    if array.shape[0] < 2 or int((np.sum(~np.isnan(array), axis=0) >= 2).sum()) == 0:
        return math.nan
    if len(np.unique(array[~np.isnan(array)])) < 2:
        return math.nan  # every value alike: no disagreement to compare with
    try:
        value = float(
            krippendorff.alpha(reliability_data=array, level_of_measurement=level)  # type: ignore[arg-type]
        )
    except (ValueError, ZeroDivisionError):
        return math.nan
    return value
