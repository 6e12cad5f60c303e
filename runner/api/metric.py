"""What every metric is: built once per job, scores one document at a time, reduces.

inspect_ai's scorers are factories that bind their options once and are declared with
their reducers; ours are the same idea in plain Python. A metric module has

- ``ROLES``: the model roles it needs (``("judge",)``, or ``()``), passed to ``setup`` as
  keyword arguments named after the roles;
- ``setup(<roles>, *, <params>) -> Metric``: validates its parameters and loads what is
  heavy (a prompt, a model) once, before the job's MLflow run exists, so a bad parameter
  is a one-line error with no half-done run;
- the returned ``Metric``: ``score(document, summary)`` per document and
  ``reduce(per_document)`` to the system values (the mean by default). The job calls
  ``score_input(item)`` with a ``ScoreInput`` (the document, the summary, the document's id
  and what the data says about the summary); its default calls ``score``, and a metric that
  needs the id or the data's ``extras`` (given claims) overrides it instead;
- optionally ``VALUES``: ``{value name: Value(title=..., range=..., better=...)}``, the facts
  about the values it returns (``runner.api.value``), recorded on the run for every reader; a
  ``Metric`` whose value names depend on its parameters gives them as ``values``;
- optionally ``CATEGORIES``: ``((display label, value key), ...)``, the kinds of error its
  values count (``("entity omission", "type/entity_omission")``); the job records them on
  the run under the metric's label, so the viewer's legend and the report's error-type
  figure read them from the stored run without importing the metric.

All a metric owns is keyed by the label the run gives it (the key under ``metrics:``), so
``metrics: {bs: {name: booookscore}}`` gets what ``metrics=booookscore`` gets under ``bs/``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.api.types import Document, MetricResult, Verdict
from runner.api.value import Value


@dataclass(frozen=True)
class ScoreInput:
    """One summary to score, with all the job knows of it: what ``Metric.score_input`` gets."""

    document: Document | None
    """The source; None for a summary the data gives without it."""
    summary: str
    doc_id: str
    """The document's id (a summary given without its source has no ``Document`` to carry
    it: a rater's outputs made elsewhere are keyed by it)."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """What the data says about the summary (``WorkItem.extras``: its given claims...)."""


class Metric:
    """Base class: subclasses implement ``score``; ``reduce`` defaults to the mean."""

    thread_safe: bool = True
    """False when ``score`` must not run for two documents at once.

    The runner then serializes it.
    """
    headline: tuple[str, ...] = ()
    """The values a researcher reads first, shown in the end-of-run summary."""
    read_back: tuple[str, ...] = ()
    """Other system values that readers of the run use (e.g. the rates behind the viewer's
    legend): kept as MLflow metrics ``<label>/<value>`` beside the headline, while the
    remaining bookkeeping values go to the run's ``usage.json``."""
    values: Mapping[str, Value] = {}
    """Facts about values whose names ``setup`` settled (ROUGE's types, G-Eval's
    dimensions), beside the module's ``VALUES``: recorded on the run the same way."""
    run_params: Mapping[str, str] = {}
    """What ``setup`` settled that the config does not show (a default derived from a file,
    the file's digest): logged as the run's params ``metrics.<label>.<key>``, so a reader
    (the meta-evaluation's row of a rater) finds the effective value."""

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Numbers (NaN with a note when undecidable) and artifacts for one summary."""
        raise NotImplementedError

    def score_input(self, item: ScoreInput) -> MetricResult:
        """What the job calls for each summary: ``score(item.document, item.summary)``.

        Override this instead of ``score`` when the document's id or the data's ``extras``
        matter to the metric.
        """
        return self.score(item.document, item.summary)

    def reduce(self, per_document: Mapping[str, MetricResult]) -> dict[str, float]:
        """System values from the per-document results: the mean of each finite value."""
        return mean_values(per_document)

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """Signs across the whole run that the numbers cannot be trusted (printed and tagged)."""
        return []

    def verdicts(self, result: MetricResult) -> list[Verdict]:
        """What a model of the metric said about one document, for that document's trace.

        The job writes each as an assessment on the trace (source: the model of the verdict's
        role); none by default.
        """
        return []


def mean_values(per_document: Mapping[str, MetricResult]) -> dict[str, float]:
    """Mean of each value over the documents that have a finite one (NaN when none does)."""
    keys = sorted({k for result in per_document.values() for k in result.values})
    out = {}
    for key in keys:
        finite = [
            r.values[key]
            for r in per_document.values()
            if key in r.values and not math.isnan(r.values[key])
        ]
        out[key] = sum(finite) / len(finite) if finite else math.nan
    return out
