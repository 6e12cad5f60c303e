"""A researcher's own metric owns a human-judgment format through ``HUMAN`` (runner.api).

The metric is a loose module in the study folder, as ``metrics=clarity`` would find it; its
annotations are read from a Label Studio export, recorded as a human run under its name and
its assessment names, stored and read back, and scored in the meta-evaluation, all through
the hook, with nothing of it known to the core. BooookScore's annotations, which name no
metric, are stored exactly as before (so their content identity is unchanged).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.human.judgments import (
    CoherenceAnnotation,
    HumanDataError,
    Span,
    from_record,
    to_record,
)
from runner.human.labelstudio import read_labelstudio
from runner.human.record import human_feedback, record_human_run
from runner.plugins.registry import load
from runner.report.meta.read import MetaInputs
from runner.report.meta.tables import human_scores
from tests.runner.human.lstasks import annotation, region, task, write

CLARITY = textwrap.dedent(
    '''
    """A researcher's metric: people mark unclear spans; the score is 10 per span."""
    from runner.api import HumanFormat, Metric, span_task

    ROLES = ()
    PROMPT_DIRS = ()


    def setup() -> Metric:
        return Metric()


    def _score(annotation):
        return 10.0 * annotation.flagged


    def _values(annotations):
        return {"unclear": sum(a.flagged for a in annotations) / len(annotations)}


    HUMAN = HumanFormat(
        name="Clarity",
        labels=("vague", "jargon"),
        score=_score,
        values=_values,
        span_assessment="unclear_span",
        summary_assessment="clarity",
        task="clarity",
    )
    HUMAN_TASKS = (span_task(HUMAN),)
    '''
)
SUMMARY = "The model converges. It uses a lemma. The end."


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A study folder holding ``clarity.py``, the folder commands run from."""
    (tmp_path / "clarity.py").write_text(CLARITY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    load.cache_clear()
    yield tmp_path
    load.cache_clear()


def _export(study: Path, labels: list[str]) -> Path:
    data = {"uid": "u1", "book": "paper", "summary": SUMMARY}
    spans = region("r1", SUMMARY, "It uses a lemma.", labels, "Which lemma?")
    return write(study, [task(1, data, annotation(7, spans))])


def test_a_loose_metric_owns_its_annotations_from_label_studio_to_meta(study: Path) -> None:
    key = {"kind": "clarity", "seed": 0, "tasks": {"u1": {"doc_id": "paper", "system": "hier"}}}
    judgments, unmatched = read_labelstudio(_export(study, ["vague"]), key, metric="clarity")
    assert unmatched == []
    assert judgments == [
        CoherenceAnnotation(
            "paper",
            "hier",
            "7",
            SUMMARY,
            (Span("It uses a lemma.", "Which lemma?", ("vague",)),),
            metric="clarity",
        )
    ]
    (judged,) = judgments
    assert isinstance(judged, CoherenceAnnotation)
    assert from_record(json.loads(json.dumps(to_record(judged)))) == judged

    store = f"sqlite:///{study / 'mlflow.db'}"
    human = record_human_run(store, None, judgments, study / "export.json")
    run = MlflowClient(store).get_run(human.run_id)
    assert run.data.metrics == {"clarity/unclear": 1.0, "clarity/annotators": 1.0}

    feedback = human_feedback(judged, "h")
    assert [(f.name, f.value) for f in feedback] == [("unclear_span", "vague"), ("clarity", 10.0)]

    inputs = MetaInputs((), tuple(judgments), {}, {}, ())
    assert human_scores(inputs) == {"Clarity (human)": {("hier", "paper"): 10.0}}


def test_a_label_outside_the_owners_format_is_refused(study: Path) -> None:
    key = {"kind": "clarity", "seed": 0, "tasks": {"u1": {"doc_id": "paper", "system": "hier"}}}
    export = _export(study, ["salience"])  # BooookScore's type, not one of clarity's
    with pytest.raises(HumanDataError, match=r"unknown error type \['salience'\].*vague"):
        read_labelstudio(export, key, metric="clarity")


def test_a_metric_without_a_format_is_one_line(study: Path) -> None:
    (study / "plain.py").write_text(
        "from runner.api import Metric\nROLES = ()\nPROMPT_DIRS = ()\n"
        "def setup():\n    return Metric()\n",
        encoding="utf-8",
    )
    judged = CoherenceAnnotation("paper", "hier", "7", SUMMARY, metric="plain")
    with pytest.raises(HumanDataError, match="metrics=plain declares no human-judgment format"):
        human_feedback(judged, "h")


def test_booookscore_annotations_are_stored_as_before() -> None:
    judged: Any = CoherenceAnnotation("paper", "hier", "7", SUMMARY, (Span("The end."),))
    assert "metric" not in to_record(judged)
    feedback = human_feedback(judged, "h")
    assert [f.name for f in feedback] == ["coherence_error", "booookscore"]
    assert feedback[-1].value == pytest.approx(100.0 * (1 - 1 / 3))
