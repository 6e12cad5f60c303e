"""A researcher's metric declares its own Label Studio task kind (``HUMAN_TASKS``).

The metric is a loose module of the study folder, ``fluency.py``, whose kind asks people to
rate a summary's fluency from 1 to 5. Nothing of it is known to the core: ``export fluency
--metric fluency`` writes its blind tasks, its key (which names the metric) and its config,
and ``import`` with that key alone reads the answers back, records a human run beside the
rated run and each rating as a HUMAN assessment on its document's trace, as a built-in kind's
are. What is checked against is what this test's annotators "answered", never the runner's
own output.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.annotate.__main__ import main
from runner.human.judgments import HumanDataError
from runner.human.task_kinds import task_kind
from runner.plugins.registry import load
from tests.runner.human.lstasks import annotation, task, write
from tests.runner.human.test_claims_record import run_job

FLUENCY = textwrap.dedent(
    '''
    """A researcher's metric whose people rate each summary's fluency, 1 to 5."""
    from runner.api import HumanTask, Metric, Rating, TaskItem
    from runner.api.human_task import CHOICES

    ROLES = ()
    PROMPT_DIRS = ()
    SCALE = ("1", "2", "3", "4", "5")


    def setup() -> Metric:
        return Metric()


    def _config():
        choices = "".join(f'<Choice value="{v}"/>' for v in SCALE)
        return (
            '<View><Text name="summary" value="$summary"/>'
            f'<Choices name="fluency" toName="summary" required="true">{choices}</Choices>'
            "</View>"
        )


    def _tasks(inputs):
        items = [
            TaskItem(doc, {"summary": text}, {"system": system.name})
            for system in inputs.systems
            for doc, text in sorted(system.summaries.items())
        ]
        return items, []


    def _read(answer):
        score = float(answer.choice("fluency", SCALE))
        return Rating(answer.doc_id, answer.systems[0], "fluency", score, answer.annotator)


    HUMAN_TASKS = (
        HumanTask(
            kind="fluency",
            help="fluency of a summary, 1 to 5",
            config=_config,
            controls={"fluency": CHOICES},
            fields=("summary",),
            tasks=_tasks,
            read=_read,
        ),
    )
    '''
)
SUMMARIES = {
    "tide": "Mara and her brother wait on the rocks until the boat returns.",
    "mill": "The mill stops.",
    "fox": "A fox and her cubs live under the library steps.",
}
ANSWERED = {"tide": "4", "mill": "2", "fox": "5"}
"""What annotator 7 chose for each book."""


@pytest.fixture(scope="module")
def rated(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(store uri, run id) of a real job over SUMMARIES."""
    folder = tmp_path_factory.mktemp("fluency")
    run_id = run_job(folder, SUMMARIES)
    return f"sqlite:///{folder / 'mlflow.db'}", run_id


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The study folder holding ``fluency.py``, where the commands run."""
    (tmp_path / "fluency.py").write_text(FLUENCY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    load.cache_clear()
    yield tmp_path
    load.cache_clear()


def _answered(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exported tasks as Label Studio exports them once annotator 7 has rated each."""
    out = []
    for number, item in enumerate(tasks, 1):
        picked = ANSWERED[item["data"]["book"]]
        result = [{"id": "f", "from_name": "fluency", "to_name": "summary", "type": "choices",
                   "value": {"choices": [picked]}}]  # fmt: skip
        out.append(task(number, item["data"], annotation(7, result)))
    return out


def test_a_loose_metrics_task_kind_goes_out_and_comes_back_as_a_builtin_does(
    rated: tuple[str, str], study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_id = rated
    out = study / "out"
    args = ["export", "fluency", run_id, "--metric", "fluency", "--out", str(out)]
    assert main([*args, "--seed", "3", "tracking.uri=" + uri]) == 0
    assert "3 fluency tasks over 3 documents, seed 3" in capsys.readouterr().out
    tasks = json.loads((out / "tasks.json").read_text())
    key = json.loads((out / "key.json").read_text())
    assert key["kind"] == "fluency" and key["metric"] == "fluency"
    assert sorted(t["data"]["book"] for t in tasks) == sorted(SUMMARIES)
    assert all(t["data"]["summary"] == SUMMARIES[t["data"]["book"]] for t in tasks)
    assert run_id not in json.dumps(tasks)  # blind: only the key names the run
    assert {e["system"] for e in key["tasks"].values()} == {run_id}
    config = ET.fromstring((out / "labeling-fluency.xml").read_text())
    assert [c.get("name") for c in config.iter("Choices")] == ["fluency"]

    export = write(study, _answered(tasks))
    imported = ["import", str(export), "--key", str(out / "key.json"), "tracking.uri=" + uri]
    assert main(imported) == 0  # no --metric: the key names it
    shown = capsys.readouterr().out.splitlines()
    assert "  rating: 3 (annotator 7: 3)" in shown
    assert "  3 HUMAN assessments on the judged documents' traces" in shown

    client = MlflowClient(uri)
    experiment = client.get_run(run_id).info.experiment_id
    traces = client.search_traces(
        locations=[experiment], filter_string=f"attributes.run_id = '{run_id}'"
    )
    found = {
        t.info.tags["runner.document"]: (a.name, a.value, a.source.source_id)
        for t in traces
        for a in t.info.assessments
        if a.source.source_type == "HUMAN"
    }
    assert found == {doc: ("fluency", float(v), "7") for doc, v in ANSWERED.items()}


def test_a_kind_no_metric_declares_is_one_line_naming_the_kinds_and_the_fix(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "fluency", "--system", "x=none.json", "--out", "o"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no task kind 'fluency': the kinds are preference, coherence, validation" in err
    assert "--metric NAME" in err


def test_an_answer_outside_the_kinds_controls_is_one_line(study: Path) -> None:
    from runner.human.labelstudio import read_labelstudio

    data = {"uid": "u1", "book": "mill", "summary": SUMMARIES["mill"]}
    result = [{"id": "f", "from_name": "fluent", "to_name": "summary", "type": "choices",
               "value": {"choices": ["3"]}}]  # fmt: skip
    key = {"kind": "fluency", "metric": "fluency", "seed": 0,
           "tasks": {"u1": {"doc_id": "mill", "system": "hier"}}}  # fmt: skip
    with pytest.raises(HumanDataError) as raised:
        read_labelstudio(write(study, [task(9, data, annotation(7, result))]), key)
    message = str(raised.value)
    assert "task 9 (book 'mill'), field 'from_name': unknown control 'fluent'" in message
    assert "the fluency labeling config has fluency (Choices: value choices)" in message
    assert "\n" not in message


def test_a_kind_declared_twice_is_one_line_naming_both(study: Path) -> None:
    (study / "twice.py").write_text(
        FLUENCY.replace('kind="fluency"', 'kind="claims"'), encoding="utf-8"
    )
    with pytest.raises(HumanDataError) as raised:
        task_kind("claims", "twice")
    assert str(raised.value) == (
        "task kind 'claims' is declared by metrics=faithfulness and by metrics=twice; "
        "rename one of them (HumanTask.kind)"
    )
