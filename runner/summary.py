"""The one-screen summary printed when a job ends."""

from __future__ import annotations

from runner.experiment import RunResult

_SHOWN = 12


def format_summary(result: RunResult) -> str:
    """Run id, main scores, cost and where to look."""
    if result.skipped:
        return (
            f"skipped {result.run_name}: this sweep already has it FINISHED as MLflow run "
            f"{result.run_id} (force=true runs it again)"
        )
    t = result.totals
    scores = {
        k: v
        for k, v in result.system_metrics.items()
        if "/" in k and not k.startswith("strategy/")
    }
    lines = [
        f"run {result.run_name}  (MLflow run id {result.run_id})",
        f"  documents: {len(result.summaries)}   model calls: {t.calls}   cache hits: {t.cache_hits}",
        f"  tokens: {t.prompt_tokens} prompt + {t.completion_tokens} completion   "
        f"cost: ${t.cost_usd:.4f}   wall: {result.system_metrics.get('wall_time_s', 0):.1f}s",
        "  time: " + "  ".join(f"{k.removesuffix('_s')} {v:.2f}s" for k, v in result.timings.items()),
    ]
    for key, value in list(scores.items())[:_SHOWN]:
        lines.append(f"  {key:<40} {value:10.3f}")
    if len(scores) > _SHOWN:
        lines.append(f"  ... {len(scores) - _SHOWN} more in MLflow")
    uri = result.tracking_uri
    where = f"mlflow ui --backend-store-uri {uri}" if uri.startswith("sqlite") else uri
    lines.append(f"  see it: {where}")
    return "\n".join(lines)
