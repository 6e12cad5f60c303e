"""Verdicts as MLflow 3 assessments (feedback) on a run's document traces.

A document's trace (``runner/tracking/traces.py``) shows how its summary was made; its
assessments show what was said about it, so the Traces tab puts the judge's and the people's
verdicts side by side under the same names:

- a metric's verdicts (``Metric.verdicts``, e.g. BooookScore's ``coherence_error`` per
  flagged sentence and ``booookscore`` per summary): source ``LLM_JUDGE``, id the model
  string of the metric's role that gave them;
- a person's (``runner/human``): source ``HUMAN``, id the annotator, under the same names.

The entities come from ``mlflow.entities`` here (``writer`` is at its size limit); the runs
and traces are reached through ``reader.client`` and ``writer.tracing_client``. A trace is
found by its run (``mlflow.sourceRun``) and its ``runner.document`` tag. Each
assessment is one store write, so a run with N flagged sentences over D documents pays
N + D writes after its work is done.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mlflow.entities import AssessmentSource
from mlflow.entities import Feedback as MlflowFeedback
from mlflow.exceptions import MlflowException

from runner.tracking.reader import RunRecord, client
from runner.tracking.store import retrying
from runner.tracking.writer import tracing_client

_LOG = logging.getLogger(__name__)
HUMAN = "HUMAN"
"""Source type of a person's verdict (its id: the annotator)."""
LLM_JUDGE = "LLM_JUDGE"
"""Source type of a judge model's verdict (its id: the model string)."""
ERROR_TAG = "assessments.error"
"""Run tag holding why the judge's verdicts were not (all) logged."""


@dataclass(frozen=True)
class Feedback:
    """One verdict on one document's summary, before it is written."""

    doc_id: str
    """The document whose trace it goes on."""
    name: str
    """What the verdict is about: a metric's verdict name (``Verdict.name``), a human format's
    assessment name, or a rating's criterion."""
    value: float | str | bool
    """The error type(s) as one string, a score, a label."""
    source_type: str
    """``HUMAN`` or ``LLM_JUDGE``."""
    source_id: str
    """The annotator, or the judge's model string."""
    rationale: str = ""
    """The questions raised, or how a score was counted."""
    metadata: dict[str, str] = field(default_factory=dict)
    """The text flagged (``sentence``, ``span``...), where it came from."""


def judged_run(tracking_uri: str, run_id: str) -> tuple[RunRecord, str] | None:
    """The run a verdict names and its experiment's name; None when the store has no such run."""
    store = client(tracking_uri)
    try:
        run = store.get_run(run_id)
    except MlflowException:
        return None
    return RunRecord.from_run(run), store.get_experiment(run.info.experiment_id).name


def document_traces(tracking_uri: str, run_id: str) -> dict[str, str]:
    """doc_id -> trace id of the run's document traces ({} for a run without traces)."""
    experiment_id = client(tracking_uri).get_run(run_id).info.experiment_id
    tracing = tracing_client(tracking_uri)
    found: dict[str, str] = {}
    token: str | None = None
    while True:
        page = tracing.search_traces(
            locations=[experiment_id],
            filter_string=f"attributes.run_id = '{run_id}'",
            max_results=500,
            page_token=token,
            include_spans=False,
        )
        for trace in page:
            document = trace.info.tags.get("runner.document")
            if document is not None:
                found.setdefault(document, trace.info.trace_id)
        token = page.token
        if not token:
            return found


def log_feedback(tracking_uri: str, run_id: str, feedback: Iterable[Feedback]) -> list[str]:
    """Write each verdict on its document's trace; the doc_ids that have no trace (skipped).

    One store write per verdict (MLflow has no batch call for assessments), retried while a
    shared sqlite store is locked by another job of a sweep.
    """
    traces = document_traces(tracking_uri, run_id)
    tracing = tracing_client(tracking_uri)
    missing: dict[str, None] = {}
    for item in feedback:
        trace_id = traces.get(item.doc_id)
        if trace_id is None:
            missing[item.doc_id] = None
            continue
        retrying(partial(tracing.log_assessment, trace_id, _entity(item)))
    return list(missing)


def _entity(item: Feedback) -> MlflowFeedback:
    """MLflow's feedback entity of one verdict."""
    return MlflowFeedback(
        name=item.name,
        value=item.value,
        source=AssessmentSource(source_type=item.source_type, source_id=item.source_id),
        rationale=item.rationale or None,
        metadata=dict(item.metadata) or None,
    )


def log_verdicts(run_client: Any, run_id: str, feedback: Sequence[Feedback]) -> int:
    """A job's model verdicts (``Metric.verdicts``) on its document traces; how many were written.

    Never raises an ``Exception``: like the traces they hang on, they are a view of what the
    run stored (the metrics' artifacts); a failure is a warning and the run tag ``ERROR_TAG``.
    """
    try:
        missing = log_feedback(run_client.tracking_uri, run_id, feedback)
    except Exception as err:  # noqa: BLE001 - the run's results are stored; this is a view
        _LOG.warning("the judge's verdicts on run %s were not logged: %s", run_id, err)
        with contextlib.suppress(Exception):
            run_client.set_tag(run_id, ERROR_TAG, f"{type(err).__name__}: {err}"[:5000])
        return 0
    return sum(1 for f in feedback if f.doc_id not in missing)
