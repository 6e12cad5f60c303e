"""What a job with ``judge.samples=K`` records beyond its pooled values.

- ``samples.json``: every sample's values, ``{doc_id: {metric: [{value: x}, ...]}}`` (the
  pooled values are ``scores.json``'s, as for a judge asked once);
- one assessment per sample and headline value on the document's trace, sourced from the
  judge's model, its ``sample`` (0 to K-1) in the metadata, beside the pooled verdicts;
- per headline value, Krippendorff's alpha among the samples with its bootstrap CI, as run
  metrics ``<metric>/<value>/samples_alpha`` (``_low``, ``_high``), and a line for the
  console: how far the judge agrees with itself;
- one warning when the judge samples at temperature 0: then the samples measure only the
  provider's nondeterminism, not the judge's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from runner.api.types import DocumentOutcome
from runner.api.value import Value
from runner.config.run_config import SAMPLED_ROLE
from runner.reliability.agreement import alpha
from runner.run.prepare import Job
from runner.tracking.assessments import LLM_JUDGE, Feedback

SAMPLES_FILE = "samples.json"


Drawn = dict[str, dict[str, list[dict[str, float | None]]]]
"""doc_id -> metric -> each sample's values (None: undecided)."""


def samples_artifact(outcomes: Sequence[DocumentOutcome]) -> Drawn:
    """``samples.json``: each document's samples per metric (NaN as null)."""
    return {
        o.doc_id: {
            label: [{k: _finite(v) for k, v in values.items()} for values in drawn]
            for label, drawn in o.samples.items()
        }
        for o in outcomes
        if o.samples
    }


def sample_feedback(
    job: Job, outcomes: Sequence[DocumentOutcome], headline: Mapping[str, Sequence[str]]
) -> list[Feedback]:
    """One assessment per (document, metric, headline value, sample) that decided."""
    if not any(o.samples for o in outcomes):
        return []
    source = job.roles[SAMPLED_ROLE].spec.model
    out = []
    for o in outcomes:
        for label, drawn in o.samples.items():
            for index, values in enumerate(drawn):
                for name in headline.get(label, ()):
                    value = values.get(name, math.nan)
                    if math.isnan(value):
                        continue
                    meta = {"sample": str(index), "samples": str(len(drawn))}
                    out.append(
                        Feedback(o.doc_id, f"{label}/{name}", value, LLM_JUDGE, source, "", meta)
                    )
    return out


def agreement(
    outcomes: Sequence[DocumentOutcome],
    headline: Mapping[str, Sequence[str]],
    facts: Mapping[str, Mapping[str, Value]],
) -> tuple[dict[str, float], list[str]]:
    """(run metrics, console lines): alpha among the samples of each headline value."""
    metrics: dict[str, float] = {}
    lines: list[str] = []
    for label, names in headline.items():
        sampled = [o for o in outcomes if label in o.samples]
        if not sampled:
            continue
        count = len(sampled[0].samples[label])
        for name in names:
            rows = [
                [o.samples[label][k].get(name, math.nan) for o in sampled] for k in range(count)
            ]
            kind = facts.get(label, {}).get(name, Value()).kind
            found = alpha(rows, kind)
            key = f"{label}/{name}"
            if math.isnan(found.alpha):
                lines.append(
                    f"{key}: alpha among the {count} samples undefined ({found.units} documents "
                    "with two decided samples, or every sample alike)"
                )
                continue
            metrics[f"{key}/samples_alpha"] = found.alpha
            if not math.isnan(found.low):
                metrics[f"{key}/samples_alpha_low"] = found.low
                metrics[f"{key}/samples_alpha_high"] = found.high
            ci = "" if math.isnan(found.low) else f" [{found.low:.2f}, {found.high:.2f}]"
            lines.append(
                f"{key}: the judge's {count} samples agree alpha={found.alpha:.2f}{ci} "
                f"({found.level}, {found.units} documents)"
            )
    return metrics, lines


def temperature_warning(job: Job) -> list[str]:
    """The one line for a judge sampled at temperature 0."""
    judge = job.roles.get(SAMPLED_ROLE)
    if judge is None or judge.spec.samples < 2 or not job.samples:
        return []
    if judge.temperature != 0:  # None: the provider's default, which samples
        return []
    return [
        f"judge.samples={judge.spec.samples} at judge.temperature=0: the samples measure only "
        "the provider's nondeterminism; set judge.temperature=0.7 (or the paper's) to measure "
        "the judge's"
    ]


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value
