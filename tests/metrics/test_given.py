"""``metrics=given``: a rater's outputs made elsewhere, read as a judged run.

Expected values are worked out here from the fixture files by hand (or, under CI, from the
released StorySumm predictions read with ``json`` in the test), never taken from the code
under test. The fixtures (tests/metrics/fixtures/given/) are StorySumm-shaped: ``rater-x/
cot.json`` is a CoT rater's file (label and explanation), ``claims.json`` a FABLES-style
rater's (label and per-claim labels), ``summaries.json`` the three summaries they judge
(``story-c`` is in neither file).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

import metrics.faithfulness.given as given
from runner.api.errors import ConfigError, MetricError
from runner.api.estimating import MetricEstimateInput, run_estimate
from runner.api.metric import Metric, ScoreInput
from runner.api.types import MetricResult
from tests.metrics.conftest import REPO
from tests.runner.test_app import all_runs, artifact, run

FIXTURES = Path(__file__).parent / "fixtures" / "given"
COT = FIXTURES / "rater-x" / "cot.json"
CLAIMS = FIXTURES / "claims.json"
SUMMARIES = FIXTURES / "summaries.json"
STORYSUMM = REPO.parent / "shared" / "data" / "faithfulness" / "storysumm"
GIVEN = ("metrics=given",)
"""The metric group (conf/metrics/given.yaml, the entry point ``given``)."""


def scored(
    metric: Metric, summary: str, doc_id: str, extras: dict[str, Any] | None = None
) -> MetricResult:
    """What the job does for one summary given without its source: ``score_input``."""
    return metric.score_input(ScoreInput(None, summary, doc_id, extras or {}))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- StorySumm's predicted_labels format --------------------------------------------------


def test_a_cot_file_gives_the_label_and_the_explanation_as_rationale() -> None:
    metric = given.setup(path=str(COT))
    assert metric.headline == ("faithful",)
    assert metric.rater == "rater-x/cot"  # the file's folder and stem
    assert metric.run_params == {
        "rater": "rater-x/cot",
        "sha256": hashlib.sha256(COT.read_bytes()).hexdigest(),
    }
    b = scored(metric, "Anna drowns at sea.", "story-b")
    assert b.values == {"faithful": 0.0}
    (verdict,) = metric.verdicts(b)
    assert (verdict.name, verdict.value, verdict.source) == ("given/faithful", False, "rater-x/cot")
    assert verdict.rationale == "The summary says Anna drowns; in the story she swims ashore."
    a = scored(metric, "Anna sails north.", "story-a")
    assert a.values == {"faithful": 1.0} and metric.verdicts(a)[0].value is True


def test_a_rater_param_overrides_the_name_from_the_file() -> None:
    metric = given.setup(path=str(COT), rater="my-judge")
    assert metric.run_params["rater"] == "my-judge"
    assert metric.verdicts(scored(metric, "s", "story-a"))[0].source == "my-judge"


def test_claim_labels_give_the_share_supported_and_a_verdict_per_claim() -> None:
    metric = given.setup(path=str(CLAIMS))
    assert metric.headline == ("faithful", "supported") and metric.read_back == ("claims",)
    claims = ("Anna sails.", "Anna drowns.", "It is winter.", "Ben waits.")
    result = scored(metric, "s", "story-b", {"claims": claims})
    # story-b's claim_labels [1, 0, 1, 0]: 2 of 4 supported
    assert result.values == {"faithful": 0.0, "supported": 0.5, "claims": 4.0}
    assert [c["supported"] for c in result.artifacts["claims.json"]] == [True, False, True, False]
    assert [c["claim"] for c in result.artifacts["claims.json"]] == list(claims)
    found = [v for v in metric.verdicts(result) if v.name == "given/claim"]
    assert [(v.value, v.metadata) for v in found] == [
        (supported, {"claim": text, "index": str(i)})
        for i, (text, supported) in enumerate(zip(claims, (True, False, True, False), strict=True))
    ]
    assert not result.notes


def test_claim_labels_without_claim_texts_keep_their_positions() -> None:
    metric = given.setup(path=str(CLAIMS))
    result = scored(metric, "s", "story-a", {"claims": ("only one",)})
    assert result.values["supported"] == 1.0 and result.values["claims"] == 3.0
    assert [c["claim"] for c in result.artifacts["claims.json"]] == ["only one", "", ""]
    assert any("3 claim labels but the data gives 1 claims" in n for n in result.notes)


def test_a_file_of_probabilities_only_gives_probability_and_says_it_has_no_label(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "unieval.json", '{"story-a": {"probs": 0.73}, "story-b": {"probs": 0.2}}'
    )
    metric = given.setup(path=str(path))
    assert metric.headline == ("probability",)
    result = scored(metric, "s", "story-a")
    assert result.values == {"probability": 0.73}
    assert metric.verdicts(result) == []  # no label: nothing to say on the trace
    warned = metric.warnings({"story-a": result})
    assert len(warned) == 1 and "unieval.json has no label" in warned[0]


def test_sentence_labels_and_their_probabilities(tmp_path: Path) -> None:
    entry = {"label": 0, "sentence_labels": [1, 0, 1], "probs": [0.9, 0.1, 0.8]}
    path = write(tmp_path / "minicheck.json", json.dumps({"story-a": entry}))
    metric = given.setup(path=str(path))
    result = scored(metric, "s", "story-a")
    assert result.values == {"faithful": 0.0, "sentences_supported": 2 / 3, "sentences": 3.0}
    sentences = [v for v in metric.verdicts(result) if v.name == "given/sentence"]
    assert [(v.value, v.metadata["probability"]) for v in sentences] == [
        (True, "0.9"),
        (False, "0.1"),
        (True, "0.8"),
    ]


def test_a_document_the_file_lacks_is_nan_with_a_note() -> None:
    metric = given.setup(path=str(COT))
    result = scored(metric, "Ben stays home.", "story-c")
    assert math.isnan(result.values["faithful"]) and "story-c" in result.notes[0]
    assert metric.verdicts(result) == []
    per_document = {
        "story-a": scored(metric, "s", "story-a"),
        "story-c": result,
    }
    assert metric.reduce(per_document) == {"faithful": 1.0}  # the mean of the one it has
    warned, unknown = metric.warnings(per_document)
    assert "1 of 2 documents have no entry" in warned
    assert "2 of cot.json's 3 documents are not documents of this job (story-b, story-z)" in unknown


def test_the_document_id_comes_from_the_source_when_no_id_is_passed() -> None:
    from runner.api.types import Document

    metric = given.setup(path=str(COT))
    assert metric.score(Document("story-b", "text"), "s").values == {"faithful": 0.0}


def test_a_file_matching_no_document_of_the_job_is_refused_in_reduce() -> None:
    metric = given.setup(path=str(COT))
    per_document = {"other": MetricResult(values={"faithful": math.nan})}
    with pytest.raises(MetricError) as err:
        metric.reduce(per_document)
    message = str(err.value)
    assert "\n" not in message and "none of its 3 documents" in message and "other" in message


@pytest.mark.parametrize(
    "entry,shown",
    [('{"label": 2}', "label 2"), ('{"label": "yes"}', "label 'yes'")],
)
def test_a_label_other_than_0_or_1_names_the_document_and_value(
    tmp_path: Path, entry: str, shown: str
) -> None:
    path = write(tmp_path / "bad.json", '{"story-a": {"label": 1}, "story-q": ' + entry + "}")
    with pytest.raises(ConfigError) as err:
        given.setup(path=str(path))
    message = str(err.value)
    assert "\n" not in message and "'story-q'" in message and shown in message


def test_a_claim_label_other_than_0_or_1_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", '{"story-a": {"label": 1, "claim_labels": [1, 3]}}')
    with pytest.raises(ConfigError, match="'story-a' has claim_labels 3, not 0 or 1"):
        given.setup(path=str(path))


# --- CSV and JSONL --------------------------------------------------------------------------


def test_a_csv_gives_its_values_and_ignores_other_columns(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mine.csv",
        "document,judge,value,rationale\nstory-a,x,1,fits\nstory-b,y,0,drowns?\nstory-z,z,,\n",
    )
    metric = given.setup(path=str(path))
    assert metric.headline == ("faithful",) and metric.rater == f"{tmp_path.name}/mine"
    b = scored(metric, "s", "story-b")
    assert b.values == {"faithful": 0.0} and metric.verdicts(b)[0].rationale == "drowns?"
    z = scored(metric, "s", "story-z")
    assert math.isnan(z.values["faithful"]) and z.notes  # an empty cell is undecided


def test_a_spreadsheets_csv_reads_as_a_plain_one(tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" in a ';' locale: a byte-order mark, CRLF, ';' between cells."""
    path = tmp_path / "sheet.csv"
    path.write_bytes("\ufeffdocument;value\r\nstory-a;1\r\nstory-b;0\r\n".encode())
    metric = given.setup(path=str(path))
    assert scored(metric, "s", "story-a").values == {"faithful": 1.0}
    assert scored(metric, "s", "story-b").values == {"faithful": 0.0}


def test_a_misspelt_document_id_is_named_from_both_sides(tmp_path: Path) -> None:
    path = write(tmp_path / "mine.csv", "document,value\nstory-a,1\nstory-bb,0\n")
    metric = given.setup(path=str(path))
    per_document = {d: scored(metric, "s", d) for d in ("story-a", "story-b")}
    lacking, unknown = metric.warnings(per_document)
    assert "1 of 2 documents have no entry in mine.csv (story-b)" in lacking
    assert unknown == (
        "given: 1 of mine.csv's 2 documents are not documents of this job (story-bb); check "
        "their spelling against the data's doc ids"
    )


def test_a_jsonl_gives_its_values_under_the_value_name(tmp_path: Path) -> None:
    lines = ['{"document": "story-a", "value": 0.25}', '{"document": "story-b", "value": 0.5}']
    path = write(tmp_path / "scores.jsonl", "\n".join(lines) + "\n")
    metric = given.setup(path=str(path), value="consistency")
    assert metric.headline == ("consistency",)
    assert scored(metric, "s", "story-b").values == {"consistency": 0.5}
    assert metric.verdicts(scored(metric, "s", "story-b")) == []  # not a label


def test_a_jsonl_faithful_value_may_be_a_boolean(tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", '{"document": "story-a", "value": true}\n')
    assert scored(given.setup(path=str(path)), "s", "story-a").values == {"faithful": 1.0}


def test_a_faithful_value_other_than_0_or_1_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "mine.csv", "document,value\nstory-a,1\nstory-b,0.7\n")
    with pytest.raises(ConfigError, match="'story-b' has faithful 0.7, not 0 or 1"):
        given.setup(path=str(path))


def test_a_document_given_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "mine.csv", "document,value\nstory-a,1\nstory-a,0\n")
    with pytest.raises(ConfigError, match="'story-a' appears twice"):
        given.setup(path=str(path))


@pytest.mark.parametrize(
    "text",
    ["just words\n", "document,score\nstory-a,1\n", '[{"label": 1}]', '{"story-a": {"x": 1}}'],
)
def test_a_file_of_neither_format_is_one_line_naming_the_formats(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "what.txt", text)
    with pytest.raises(ConfigError) as err:
        given.setup(path=str(path))
    message = str(err.value)
    assert "\n" not in message and "predicted_labels JSON" in message
    assert "JSONL" in message and "CSV (header document,value)" in message


def test_a_missing_path_is_one_line() -> None:
    with pytest.raises(ConfigError, match="metrics.given.path is not set"):
        given.setup()


def test_it_calls_no_model_and_estimates_none() -> None:
    inputs = MetricEstimateInput("summary", 100.0, {}, lambda relative: None, {})
    assert given.ROLES == () and run_estimate(given, inputs) == []


# --- the fingerprint ----------------------------------------------------------------------


def test_a_changed_file_is_a_new_experiment(tmp_path: Path) -> None:
    from runner.config.fingerprint import fingerprint, prompt_files
    from runner.config.run_config import build_run_config
    from tests.runner.config.test_config import composed

    path = write(tmp_path / "cot.json", COT.read_text(encoding="utf-8"))
    items = ["strategy=none", "data=summaries", f"data.path={SUMMARIES}", *GIVEN]
    items.append(f"metrics.given.path={path}")

    def mark() -> str:
        config = build_run_config(composed(*items), tuple(items))
        files = prompt_files(config)
        assert files[f"prompts/metrics.given.path/{path.name}"] == path.resolve()
        return fingerprint(config, files)

    before = mark()
    assert mark() == before  # the same file: the same experiment
    write(path, COT.read_text(encoding="utf-8").replace('"label": 0', '"label": 1'))
    assert mark() != before


# --- whole runs -----------------------------------------------------------------------------


def given_run(stores: dict[str, str], path: Path) -> list[str]:
    return [
        "strategy=none",
        "data=summaries",
        f"data.path={SUMMARIES}",
        *GIVEN,
        f"metrics.given.path={path}",
        *[f"{k}={v}" for k, v in stores.items()],
    ]


def test_a_run_records_faithful_per_document_the_rater_and_its_verdicts(
    stores: dict[str, str],
) -> None:
    import mlflow

    from runner.tracking.assessments import document_traces

    result = run(given_run(stores, COT))
    client = MlflowClient(stores["tracking.uri"])
    logged = client.get_run(result.run_id)
    assert logged.info.status == "FINISHED"
    scores = json.loads(artifact(client, result.run_id, "scores.json"))
    assert scores["story-a"]["given/faithful"] == 1.0
    assert scores["story-b"]["given/faithful"] == 0.0
    assert scores["story-c"]["given/faithful"] is None or math.isnan(
        scores["story-c"]["given/faithful"]
    )
    assert logged.data.metrics["given/faithful"] == 0.5  # (1 + 0) / 2: story-c has none
    assert logged.data.params["metrics.given.rater"] == "rater-x/cot"
    assert (
        logged.data.params["metrics.given.sha256"] == hashlib.sha256(COT.read_bytes()).hexdigest()
    )
    assert result.totals.calls == 0
    mlflow.set_tracking_uri(stores["tracking.uri"])
    trace = mlflow.get_trace(document_traces(stores["tracking.uri"], result.run_id)["story-b"])
    found = [a for a in trace.info.assessments if a.name == "given/faithful"]
    assert [(a.value, a.source.source_id, a.rationale) for a in found] == [
        (False, "rater-x/cot", "The summary says Anna drowns; in the story she swims ashore.")
    ]


def test_a_missing_file_is_one_line_before_any_run(stores: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        run(given_run(stores, tmp_path / "nowhere.json"))
    assert "nowhere.json does not exist; give an existing file" in str(err.value)
    assert "\n" not in str(err.value) and all_runs(stores["tracking.uri"]) == []


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
    )


def test_a_file_matching_no_document_fails_the_run_with_one_line(
    stores: dict[str, str], tmp_path: Path
) -> None:
    path = write(tmp_path / "elsewhere.json", '{"x-1": {"label": 1}, "x-2": {"label": 0}}')
    done = cli(*given_run(stores, path))
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "none of its 2 documents" in line]
    assert len(lines) == 1 and "story-a" in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    runs = all_runs(stores["tracking.uri"])
    assert runs and all(r.info.status != "FINISHED" for r in runs)


# --- the released StorySumm predictions (under CI) ----------------------------------------


def released(relative: str) -> tuple[Path, dict[str, Any]]:
    path = STORYSUMM / "predicted_labels" / relative
    if not path.exists():
        from tests.conftest import missing_shared

        missing_shared("StorySumm predicted_labels")
    return path, json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "relative",
    [
        "gpt-4-0125-preview/justquestion.json",
        "gpt-4-0125-preview/cot.json",
        "claude-3-opus-20240229/justquestion.json",
        "mixtral/cot.json",
        "fables-gpt-4-turbo-preview.json",
        "minicheck-flan-t5-large.json",
    ],
)
def test_the_released_predictions_give_their_labels(relative: str) -> None:
    path, raw = released(relative)
    metric = given.setup(path=str(path))
    per_document = {doc: scored(metric, "s", doc) for doc in raw}
    share = sum(entry["label"] for entry in raw.values()) / len(raw)
    assert len(raw) == 96
    assert metric.reduce(per_document)["faithful"] == pytest.approx(share)
    if relative == "gpt-4-0125-preview/justquestion.json":
        assert share == pytest.approx(67 / 96)  # the README's "70% faithful" for binary GPT-4
        assert metric.headline == ("faithful", "probability")
    for doc, entry in raw.items():
        values = per_document[doc].values
        if "claim_labels" in entry:
            labels = entry["claim_labels"]
            assert values["supported"] == pytest.approx(labels.count(1) / len(labels))
        if isinstance(entry.get("probs"), str):
            assert metric.verdicts(per_document[doc])[0].rationale == entry["probs"]


def test_the_released_unieval_file_has_probabilities_only() -> None:
    path, raw = released("unieval.json")
    metric = given.setup(path=str(path))
    assert metric.headline == ("probability",)
    doc, entry = next(iter(raw.items()))
    assert scored(metric, "s", doc).values == {"probability": entry["probs"]}


def test_a_storysumm_run_pairs_claim_labels_with_the_release_claims(
    stores: dict[str, str],
) -> None:
    """data=storysumm gives the claims' text (extras); the FABLES rater's labels line up."""
    path, raw = released("fables-gpt-4-turbo-preview.json")
    text = (STORYSUMM / "storysumm.json").read_text(encoding="utf-8")
    release = json.loads(text.replace('faced.", "\n', 'faced.",\n'))  # the release's one typo
    items = [
        "strategy=none",
        "data=storysumm",
        f"data.path={STORYSUMM / 'storysumm.json'}",
        "data.limit=3",
        *GIVEN,
        f"metrics.given.path={path}",
        *[f"{k}={v}" for k, v in stores.items()],
    ]
    result = run(items)
    client = MlflowClient(stores["tracking.uri"])
    claims = json.loads(artifact(client, result.run_id, "claims.json"))
    scores = json.loads(artifact(client, result.run_id, "scores.json"))
    assert len(claims) == 3
    for doc, judged in claims.items():
        assert [c["claim"] for c in judged] == list(release[doc]["claims"])
        assert [c["supported"] for c in judged] == [x == 1 for x in raw[doc]["claim_labels"]]
        assert scores[doc]["given/faithful"] == raw[doc]["label"]
