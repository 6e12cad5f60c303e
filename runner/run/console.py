"""The one-screen summary printed when a job ends: what a researcher reads first.

The headline values of each metric group lead, then calls, tokens, cost and time, then a
table per document and any warning. Bookkeeping counters (judge calls, re-asks, phase
times, strategy counters) stay in MLflow. The two caches are named apart: the runner's
response cache (a repeated request costs nothing) and the provider's prefix cache
(prompt tokens it did not have to process again). Numbers follow the report's rule
(``runner.report.format.readable``): 3 significant digits below 1 (a ratio of 0.0183, not
0.02), 2 decimals above, whole numbers whole.
"""

from __future__ import annotations

import math

from runner.run.lifecycle import RunResult

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
    if result.description:
        lines.append(f"  {result.description.split('; overrides:')[0]}")
    titles = {
        k: f"{_label(result, k)} ({k})" if _label(result, k) != k else k
        for k in result.headline
        if k in system
    }
    width = max((len(t) for t in titles.values()), default=0)
    for key, title in titles.items():
        value = _number(system[key]).rjust(10)
        lines.append(f"  {title:<{width}} {value}   ({_counted(result, key)})")
    lines += [
        f"  model calls: {t.calls} (+{t.cache_hits} answered from the response cache)   "
        f"tokens: {t.prompt_tokens} prompt + {t.completion_tokens} completion"
        + (
            f" ({t.cached_prompt_tokens} prompt tokens reused by the provider's prefix cache)"
            if t.cached_prompt_tokens
            else ""
        ),
        f"  cost: ${t.cost_usd:.4f}   wall: {sum(result.timings.values()):.1f} s",
    ]
    lines += [f"  agreement: {line}" for line in result.agreement]
    lines += _table(result)
    lines += [f"  warning: {w}" for w in result.warnings]
    lines += _where(result)
    return "\n".join(lines)


def _counted(result: RunResult, key: str) -> str:
    """'mean of 3 documents', counting only the documents with a value (decided ones)."""
    values = [v.get(key) for v in result.per_document.values()] if result.per_document else None
    if values is None:
        return f"mean of {len(result.summaries)} documents"
    decided = sum(1 for v in values if v is not None and not math.isnan(v))
    if decided == len(values):
        return f"mean of {decided} documents"
    return f"mean of {decided} of {len(values)} documents; the others undecided"


def _where(result: RunResult) -> list[str]:
    """Where the summaries, the viewer page and the MLflow UI are, as commands to paste."""
    uri = result.tracking_uri
    lines = []
    if result.artifact_dir:
        lines.append(f"  summaries: {result.artifact_dir}/summaries.json")
        if result.viewer:
            lines.append(f"  viewer:    {result.artifact_dir}/viewer.html  (open it in a browser)")
    if not result.experiment_id:
        return [*lines, f"  MLflow UI: {uri}"]
    from runner.ui import open_lines, run_url

    # the sweep's closing lines say it the same way (runner.ui.sweep_lines)
    first, *more = open_lines(uri, run_url(uri, result.experiment_id, result.run_id))
    lines.append(f"  MLflow UI: {first}")
    return lines + [f"             {line}" for line in more]


def _number(value: float) -> str:
    """The report's rule for one number: 0.0183, 0.500, 73.83, 12 (``readable``)."""
    from runner.report.format import readable

    return readable(value)


def _label(result: RunResult, key: str) -> str:
    """The value's declared title (``BooookScore``, ``Avg length (tokens)``), else the key."""
    return result.titles.get(key) or key


def _table(result: RunResult) -> list[str]:
    """One row per document: its headline values, each column as wide as its full title."""
    keys = [k for k in result.headline if any(k in v for v in result.per_document.values())]
    if not keys or not result.per_document:
        return []
    titles = [_label(result, k) for k in keys]
    widths = [max(len(t), 8) + 2 for t in titles]
    width = max(len("document"), *(len(d) for d in result.per_document)) + 2
    out = [
        "  "
        + "document".ljust(width)
        + "".join(t.rjust(w) for t, w in zip(titles, widths, strict=True))
    ]
    for doc_id, values in list(result.per_document.items())[:_ROWS]:
        cells = "".join(
            _number(values[k]).rjust(w) if k in values else "-".rjust(w)
            for k, w in zip(keys, widths, strict=True)
        )
        out.append("  " + doc_id.ljust(width) + cells)
    if len(result.per_document) > _ROWS:
        out.append(f"  ... {len(result.per_document) - _ROWS} more documents in scores_table.json")
    return out
