"""The one-screen summary printed when a job ends: what a researcher reads first.

The headline values of each metric group lead, then calls, tokens, cost and time, then a
table per document and any warning. Bookkeeping counters (judge calls, re-asks, phase
times, strategy counters) stay in MLflow. The two caches are named apart: the runner's
response cache (a repeated request costs nothing) and the provider's prefix cache
(prompt tokens it did not have to process again).
"""

from __future__ import annotations

from runner.experiment import RunResult

_ROWS = 20


def format_summary(result: RunResult) -> str:
    """Headline values, cost, per-document table, warnings and where to look."""
    if result.skipped:
        return (
            f"skipped {result.run_name}: this sweep already has it FINISHED as MLflow run "
            f"{result.run_id} (force=true runs it again)"
        )
    t = result.totals
    system = result.system_metrics
    lines = [f"run {result.run_name}  (MLflow run id {result.run_id})"]
    for key in result.headline:
        if key in system:
            lines.append(f"  {key:<34} {system[key]:10.2f}   (mean of {len(result.summaries)} documents)")
    lines += [
        f"  model calls: {t.calls} (+{t.cache_hits} answered from the response cache)   "
        f"tokens: {t.prompt_tokens} prompt + {t.completion_tokens} completion"
        + (f" ({t.cached_prompt_tokens} prompt tokens reused by the provider's prefix cache)"
           if t.cached_prompt_tokens else ""),
        f"  cost: ${t.cost_usd:.4f}   wall: {sum(result.timings.values()):.1f} s",
    ]
    lines += _table(result)
    lines += [f"  warning: {w}" for w in result.warnings]
    uri = result.tracking_uri
    where = f"python -m runner.ui --backend-store-uri {uri}" if uri.startswith("sqlite") else uri
    lines.append(f"  see it: {where}")
    return "\n".join(lines)


def _table(result: RunResult) -> list[str]:
    """One row per document: its headline values."""
    keys = [k for k in result.headline if any(k in v for v in result.per_document.values())]
    if not keys or not result.per_document:
        return []
    short = [k.split("/", 1)[-1][:14] for k in keys]
    width = max(len(d) for d in result.per_document) + 2
    out = ["  " + "document".ljust(width) + "".join(f"{s:>16}" for s in short)]
    for doc_id, values in list(result.per_document.items())[:_ROWS]:
        cells = "".join(f"{values[k]:16.2f}" if k in values else f"{'-':>16}" for k in keys)
        out.append("  " + doc_id.ljust(width) + cells)
    if len(result.per_document) > _ROWS:
        out.append(f"  ... {len(result.per_document) - _ROWS} more documents in scores_table.json")
    return out
