"""What a job with repeated samples of its judge or a panel of judges records beyond its values.

- ``samples.json``: every judge's every sample, ``{doc_id: {metric: [{"judge", "sample",
  "values"}]}}`` (the pooled values are ``scores.json``'s, as for one judge asked once);
- with a panel (``judges=``), each member's values per document and for the run, named
  ``<metric>:<judge>/<value>``, beside the panel's pooled ``<metric>/<value>``;
- one assessment per sample and headline value on the document's trace, sourced from that
  judge's model, its ``sample`` and ``judge`` in the metadata, beside the pooled verdicts;
- per headline value, Krippendorff's alpha with its bootstrap CI among each judge's samples
  (``<metric>/<value>/samples_alpha``, ``<metric>:<judge>/<value>/samples_alpha`` in a
  panel) and among the panel's members (``<metric>/<value>/judges_alpha``), each with
  ``_low`` and ``_high``, and a console line each;
- one warning per judge sampled at temperature 0: its samples then measure only the
  provider's nondeterminism.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from runner.api.types import DocumentOutcome
from runner.api.value import Value
from runner.config.panel import JUDGE, member_role, override_key
from runner.config.run_config import SAMPLED_ROLE
from runner.reliability.agreement import alpha
from runner.reliability.panel import member_label
from runner.run.prepare import Job, judge_gateways
from runner.tracking.assessments import LLM_JUDGE, Feedback

SAMPLES_FILE = "samples.json"


Drawn = dict[str, dict[str, list[dict[str, Any]]]]
"""doc_id -> metric -> each sample: ``{"judge", "sample", "values"}`` (None: undecided)."""


def samples_artifact(outcomes: Sequence[DocumentOutcome]) -> Drawn:
    """``samples.json``: each document's samples per metric and judge (NaN as null)."""
    return {
        o.doc_id: {
            label: [
                {
                    "judge": s.judge,
                    "sample": s.sample,
                    "values": {k: _finite(v) for k, v in s.values.items()},
                }
                for s in drawn
            ]
            for label, drawn in o.samples.items()
        }
        for o in outcomes
        if o.samples
    }


def member_values(outcomes: Sequence[DocumentOutcome]) -> dict[str, dict[str, float]]:
    """doc_id -> ``<metric>:<judge>/<value>``: each panel member's values per document."""
    return {
        o.doc_id: {
            f"{member_label(label, judge)}/{k}": float(v)
            for label, members in o.judges.items()
            for judge, result in members.items()
            for k, v in result.values.items()
        }
        for o in outcomes
        if o.judges
    }


def sample_feedback(
    job: Job, outcomes: Sequence[DocumentOutcome], headline: Mapping[str, Sequence[str]]
) -> list[Feedback]:
    """One assessment per (document, metric, headline value, judge, sample) that decided."""
    if not any(o.samples for o in outcomes):
        return []
    gateways = judge_gateways(job.config, job.roles)
    out = []
    for o in outcomes:
        for label, drawn in o.samples.items():
            for s in drawn:
                for name in headline.get(label, ()):
                    value = s.values.get(name, math.nan)
                    if math.isnan(value):
                        continue
                    meta = {"sample": str(s.sample), "judge": s.judge or SAMPLED_ROLE}
                    source = gateways[s.judge].spec.model
                    out.append(
                        Feedback(o.doc_id, f"{label}/{name}", value, LLM_JUDGE, source, "", meta)
                    )
    return out


def agreement(
    outcomes: Sequence[DocumentOutcome],
    headline: Mapping[str, Sequence[str]],
    facts: Mapping[str, Mapping[str, Value]],
) -> tuple[dict[str, float], list[str]]:
    """(run metrics, console lines): alpha among each judge's samples, and among a panel."""
    metrics: dict[str, float] = {}
    lines: list[str] = []
    for label, names in headline.items():
        sampled = [o for o in outcomes if label in o.samples]
        if not sampled:
            continue
        judges = list(dict.fromkeys(s.judge for s in sampled[0].samples[label]))
        for name in names:
            kind = facts.get(label, {}).get(name, Value()).kind
            for judge in judges:
                rows = _sample_rows(sampled, label, judge, name)
                if len(rows) > 1:
                    who = member_label(label, judge) if judge else label
                    what = (
                        f"the judge's {len(rows)} samples"
                        if not judge
                        else (f"judge {judge}'s {len(rows)} samples")
                    )
                    _record(metrics, lines, f"{who}/{name}", "samples", rows, kind, what)
            panel = [o for o in sampled if label in o.judges]
            if panel:
                rows = [
                    [o.judges[label][judge].values.get(name, math.nan) for o in panel]
                    for judge in judges
                ]
                what = f"the panel's {len(judges)} judges ({', '.join(judges)})"
                _record(metrics, lines, f"{label}/{name}", "judges", rows, kind, what)
    return metrics, lines


def _sample_rows(
    outcomes: Sequence[DocumentOutcome], label: str, judge: str, name: str
) -> list[list[float]]:
    """One row per sample of ``judge``, one column per document."""
    per_doc = [
        {s.sample: s.values.get(name, math.nan) for s in o.samples[label] if s.judge == judge}
        for o in outcomes
    ]
    count = max((len(d) for d in per_doc), default=0)
    return [[d.get(k, math.nan) for d in per_doc] for k in range(count)]


def _record(
    metrics: dict[str, float],
    lines: list[str],
    key: str,
    among: str,
    rows: list[list[float]],
    kind: str,
    what: str,
) -> None:
    """Alpha of ``rows`` as ``<key>/<among>_alpha`` (and its CI), and its console line."""
    found = alpha(rows, kind)
    if math.isnan(found.alpha):
        lines.append(
            f"{key}: alpha among {what} undefined ({found.units} documents with two decided "
            "values, or every value alike)"
        )
        return
    metrics[f"{key}/{among}_alpha"] = found.alpha
    if not math.isnan(found.low):
        metrics[f"{key}/{among}_alpha_low"] = found.low
        metrics[f"{key}/{among}_alpha_high"] = found.high
    ci = "" if math.isnan(found.low) else f" [{found.low:.2f}, {found.high:.2f}]"
    lines.append(
        f"{key}: {what} agree alpha={found.alpha:.2f}{ci} ({found.level}, {found.units} documents)"
    )


def temperature_warning(job: Job) -> list[str]:
    """One line per judge sampled at temperature 0, and per metric at a temperature of its own.

    The latter when the user set the judge's temperature or samples the judge.
    """
    out = _own_temperatures(job)
    for name, judge in judge_gateways(job.config, job.roles).items():
        if judge.spec.samples < 2 or not job.replicas or judge.temperature != 0:
            continue  # None: the provider's default, which samples
        role = member_role(name) if name else SAMPLED_ROLE
        out.append(
            f"{role}.samples={judge.spec.samples} at temperature 0: the samples measure only "
            "the provider's nondeterminism; set judge.temperature=0.7 (or the paper's) to "
            "measure the judge's"
        )
    return out


def _own_temperatures(job: Job) -> list[str]:
    """``metrics.<label>.temperature`` that is not the judge's, where the user expects the judge's.

    That is with ``judge.temperature=`` on the command line, or the judge sampled. The run's
    ``judge.temperature`` param is the judge's; that metric's calls carry its own.
    """
    judges = judge_gateways(job.config, job.roles)
    if not judges:
        return []
    sampled = any(judge.spec.samples > 1 for judge in judges.values())
    asked = any(override_key(o).endswith(".temperature") and override_key(o).startswith(JUDGE)
                for o in job.config.overrides)  # fmt: skip
    if not (sampled or asked):
        return []
    out = []
    first = next(iter(judges.values())).temperature
    for label, params in job.config.metrics.items():
        own = params.get("temperature")
        if own is None or JUDGE not in job.config.metric_module(label).ROLES:
            continue
        own = float(own)
        if own == first:
            continue
        out.append(
            f"metrics.{label}.temperature={own} asks its judge at {own}, not at "
            f"judge.temperature={first} as the run's params say of the judge: set "
            f"metrics.{label}.temperature=null to use the judge's"
        )
    return out


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value
