"""The least time an endpoint's provider limits allow (``model.rpm``, ``tpm``, ...).

The limits are shared by every job of a sweep (``runner/llm/rate.py``), so they bound a
job's calls and, summed over the cells, the whole sweep's.
"""

from __future__ import annotations

from runner.llm.spec import ModelSpec


def rate_seconds(spec: ModelSpec, calls: float, prompt: float, completion: float) -> float:
    """Seconds that many calls and tokens need at the endpoint's limits (0 when unlimited)."""
    bounds = [0.0]
    if spec.rpm:
        bounds.append(60.0 * calls / spec.rpm)
    if spec.tpm:
        bounds.append(60.0 * (prompt + completion) / spec.tpm)
    if spec.input_tpm:
        bounds.append(60.0 * prompt / spec.input_tpm)
    if spec.output_tpm:
        bounds.append(60.0 * completion / spec.output_tpm)
    return max(bounds)
