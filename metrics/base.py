"""The metric base class, kept importable here for the built-in metrics.

It lives in the plugin API (``runner/metric.py``, re-exported by ``runner.api``), so a
metric written outside this package subclasses the same class.
"""

from runner.metric import Metric, mean_values

__all__ = ["Metric", "mean_values"]
