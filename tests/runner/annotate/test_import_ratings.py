"""``python -m runner.annotate import ratings.csv``: a table of ratings from any tool.

A real job makes the rated run; the import records a human run beside it and each rating
as a HUMAN assessment on its document's trace. What is checked against is the table this
test writes, never the runner's own output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.annotate.__main__ import main
from tests.runner.annotate.claims_runs import logged_run
from tests.runner.human.test_claims_record import run_job

SUMMARIES = {
    "tide": "Mara and her brother wait on the rocks until the boat returns.",
    "mill": "The mill stops.",
    "fox": "A fox and her cubs live under the library steps.",
}
RATED = {  # (document, annotator) -> informative, 1 to 5
    ("tide", "ana"): 4,
    ("mill", "ana"): 1,
    ("fox", "ana"): 5,
    ("tide", "ben"): 5,
    ("mill", "ben"): 2,
    ("fox", "ben"): 4,
}


@pytest.fixture(scope="module")
def rated(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(store uri, run id) of a real job over SUMMARIES."""
    folder = tmp_path_factory.mktemp("ratings")
    run_id = run_job(folder, SUMMARIES)
    return f"sqlite:///{folder / 'mlflow.db'}", run_id


def _humans(uri: str) -> list[Any]:
    client = MlflowClient(uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    return list(client.search_runs(ids, "tags.`runner.kind` = 'human'")) if ids else []


def _csv(
    path: Path, run_id: str, header: str = "document,system,criterion,value,annotator"
) -> Path:
    rows = [f"{doc},{run_id},informative,{value},{who}" for (doc, who), value in RATED.items()]
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_csv_of_ratings_is_recorded_beside_the_rated_run(
    rated: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_id = rated
    table = _csv(tmp_path / "ratings.csv", run_id)
    assert main(["import", str(table), "tracking.uri=" + uri]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"6 judgments read from {table}"
    assert "  rating: 6 (annotator ana: 3, annotator ben: 3)" in out
    (human,) = _humans(uri)
    assert f"recorded human run {human.info.run_id} in {uri}" in out
    assert "  6 HUMAN assessments on the judged documents' traces" in out
    assert human.data.tags["human.judged_run"] == run_id

    client = MlflowClient(uri)
    experiment = client.get_run(run_id).info.experiment_id
    assert human.info.experiment_id == experiment  # beside the run it rates
    traces = client.search_traces(
        locations=[experiment], filter_string=f"attributes.run_id = '{run_id}'"
    )
    found = {
        (t.info.tags["runner.document"], a.source.source_id): (a.name, a.value)
        for t in traces
        for a in t.info.assessments
        if a.source.source_type == "HUMAN"
    }
    assert found == {key: ("informative", float(value)) for key, value in RATED.items()}

    # The same table again records nothing: every rating would count twice.
    assert main(["import", str(table), "tracking.uri=" + uri]) == 0
    assert f"already recorded: human run {human.info.run_id}" in capsys.readouterr().out
    assert len(_humans(uri)) == 1


def test_json_lines_of_ratings_read_as_the_csv_does(
    rated: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_id = rated
    table = tmp_path / "ratings.jsonl"
    rows = [
        {"document": d, "system": run_id, "criterion": "informative", "value": v, "annotator": a}
        for (d, a), v in RATED.items()
    ]
    table.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["import", str(table), "tracking.uri=" + uri, "--no-record"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        f"6 judgments read from {table}",
        "  rating: 6 (annotator ana: 3, annotator ben: 3)",
    ]


@pytest.mark.parametrize(
    ("header", "value", "expected"),
    [
        (
            "document,system,criterion,value,rater",
            None,
            ("missing column(s) ['annotator']", "document,system,criterion,value,annotator"),
        ),
        (None, "n/a", ("'n/a' is not a number", "write a number")),
    ],
    ids=["misnamed column", "a stray n/a"],
)
def test_a_bad_table_is_one_line_and_nothing_is_recorded(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    header: str | None,
    value: str | None,
    expected: tuple[str, ...],
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    table = _csv(
        tmp_path / "ratings.csv", "0" * 32, header or "document,system,criterion,value,annotator"
    )
    if value is not None:
        lines = table.read_text(encoding="utf-8").splitlines()
        lines[2] = lines[2].replace(",1,", f",{value},")
        table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["import", str(table), "tracking.uri=" + uri]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: "), err
    assert all(part in err for part in expected), err
    assert _humans(uri) == []


# --- labels matched to the run's documents, or named ------------------------------------------


def _logged_run(root: Path, experiment: str = "summarization") -> tuple[str, str]:
    """(store uri, run id) of a FINISHED run holding SUMMARIES."""
    return logged_run(root, SUMMARIES, experiment)


def _with_strangers(path: Path, run_id: str) -> Path:
    """The ratings table, plus ratings of two documents the run does not have."""
    _csv(path, run_id)
    strangers = [f"bakeryy,{run_id},informative,3,ana", f"lighthouse,{run_id},informative,2,ben"]
    path.write_text(path.read_text(encoding="utf-8") + "\n".join(strangers) + "\n", "utf-8")
    return path


def test_ratings_of_documents_the_run_lacks_are_named_and_nothing_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_id = _logged_run(tmp_path)
    table = _with_strangers(tmp_path / "ratings.csv", run_id)
    assert main(["import", str(table), "tracking.uri=" + uri]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: {table}: 2 of 8 judgments name 2 document(s) ('bakeryy', 'lighthouse') that "
        f"run {run_id[:8]} does not have; nothing recorded; fix the document ids (the run's "
        "doc ids), or add --matched-only to record only the judgments of documents the run has"
    )
    assert _humans(uri) == []


def test_matched_only_records_the_matched_ratings_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_id = _logged_run(tmp_path)
    table = _with_strangers(tmp_path / "ratings.csv", run_id)
    assert main(["import", str(table), "tracking.uri=" + uri, "--matched-only"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        "skipped 2 of 8 judgments (--matched-only): they name 2 document(s) ('bakeryy', "
        f"'lighthouse') that run {run_id[:8]} does not have"
    ) in out
    (human,) = _humans(uri)
    client = MlflowClient(uri)
    local = client.download_artifacts(human.info.run_id, "human/judgments.jsonl", str(tmp_path))
    recorded = [json.loads(x) for x in Path(local).read_text(encoding="utf-8").splitlines()]
    assert sorted(r["doc_id"] for r in recorded) == sorted(d for d, _ in RATED)


def test_a_misspelt_experiment_is_refused_with_the_nearest_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_id = _logged_run(tmp_path, experiment="informative")
    table = _csv(tmp_path / "ratings.csv", run_id)
    args = ["import", str(table), "tracking.uri=" + uri, "--experiment", "informatve"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        f"error: experiment 'informatve' does not exist in {uri} (experiments there: "
    )
    assert err.endswith(
        "did you mean informative? give one it has, or add --create-experiment to record the "
        "human run in a new experiment"
    )
    assert _humans(uri) == []
    assert main([*args, "--create-experiment"]) == 0  # asked for: made
    (human,) = _humans(uri)
    assert MlflowClient(uri).get_experiment(human.info.experiment_id).name == "informatve"


def test_a_spreadsheets_csv_reads_as_a_plain_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Excel's "CSV UTF-8" in a ';' locale: a byte-order mark, CRLF line ends, ';' separators."""
    plain = _csv(tmp_path / "plain.csv", "0" * 32).read_text(encoding="utf-8")
    sheet = tmp_path / "sheet.csv"
    sheet.write_bytes(("\ufeff" + plain.replace(",", ";").replace("\n", "\r\n")).encode())
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for name in ("plain", "sheet"):
        out = ["--no-record", "--out", str(tmp_path / f"{name}.jsonl")]
        assert main(["import", str(tmp_path / f"{name}.csv"), "tracking.uri=" + uri, *out]) == 0
    assert f"6 judgments read from {sheet}" in capsys.readouterr().out
    read = [(tmp_path / f"{n}.jsonl").read_text(encoding="utf-8") for n in ("plain", "sheet")]
    assert read[0] == read[1] and len(read[0].splitlines()) == 6


def test_faithful_ratings_feed_the_faithfulness_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """criterion=faithful, 0 or 1: summary labels the meta report compares with the rater."""
    import csv

    from runner.report.config import ReportConfig
    from runner.report.make import make_report

    rater = {"tide": 1.0, "mill": 0.0, "fox": 1.0}
    uri, run_id = logged_run(
        tmp_path,
        SUMMARIES,
        params={"metrics.faithfulness.method": "binary", "judge.model": "openai/gpt-4o"},
        scores={d: {"faithfulness/faithful": v} for d, v in rater.items()},
    )
    people = {"tide": 1, "mill": 0, "fox": 0}
    rows = [f"{d},{run_id},faithful,{v},ana" for d, v in people.items()]
    table = tmp_path / "faithful.csv"
    table.write_text("\n".join(["document,system,criterion,value,annotator", *rows]) + "\n")
    assert main(["import", str(table), "tracking.uri=" + uri]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        "3 ratings of criterion faithful recorded as faithfulness labels of their run's "
        "summaries (1 faithful, 0 not): the meta report's faithfulness tables"
    ) in out
    out_dir = tmp_path / "report"
    make_report(ReportConfig(uri, "summarization", out=out_dir, plots=False, meta=True))
    with (out_dir / "meta_faithfulness.csv").open(encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    # rater faithful: tide, fox; people faithful: tide only
    assert int(row["summaries"]) == 3
    assert float(row["% faithful"]) == pytest.approx(200 / 3)
    assert float(row["precision"]) == pytest.approx(0.5)
    assert float(row["recall"]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("criterion", "values", "expected"),
    [
        (
            "faithful",
            {"tide": 2, "mill": 0, "fox": 0},  # a 0/2 scale: its zeros alone were labels
            "error: 1 of the ratings of criterion faithful are not 0 or 1 (e.g. 'tide': 2; "
            "values 2); write 1 (faithful) or 0 (not faithful) for every one; nothing recorded",
        ),
        (
            "faithfulness",
            {"tide": 1, "mill": 0, "fox": 0},  # recorded, then 'no labels' in the report
            "error: criterion 'faithfulness' is not 'faithful', the criterion the faithfulness "
            "tables read: write criterion faithful (values 1 faithful, 0 not), or name a rating "
            "of your own so that it is not mistaken for one; nothing recorded",
        ),
    ],
)
def test_faithful_labels_that_cannot_mean_what_the_user_thinks_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    criterion: str,
    values: dict[str, int],
    expected: str,
) -> None:
    uri, run_id = logged_run(tmp_path, SUMMARIES)
    rows = [f"{d},{run_id},{criterion},{v},ana" for d, v in values.items()]
    table = tmp_path / "faithful.csv"
    table.write_text("\n".join(["document,system,criterion,value,annotator", *rows]) + "\n")
    assert main(["import", str(table), "tracking.uri=" + uri]) == 2
    assert capsys.readouterr().err.strip() == expected
    assert _humans(uri) == []


def test_the_same_labels_in_a_second_experiment_are_recorded_there_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once 'already recorded' (the run was in another experiment) and the second
    experiment's report had no labels; a third import into it is then 'already recorded'."""
    uri, run_id = _logged_run(tmp_path)
    table = _csv(tmp_path / "ratings.csv", run_id)
    assert main(["import", str(table), "tracking.uri=" + uri]) == 0
    again = ["import", str(table), "tracking.uri=" + uri, "--experiment", "study-b"]
    assert main([*again, "--create-experiment"]) == 0
    out = capsys.readouterr().out
    first, second = sorted(_humans(uri), key=lambda r: r.info.start_time)
    names = {MlflowClient(uri).get_experiment(r.info.experiment_id).name for r in (first, second)}
    assert names == {"summarization", "study-b"}
    assert (
        f"these 6 judgments are also in another experiment (human run {first.info.run_id[:8]}); "
        "recorded in experiment 'study-b' too, for its reports"
    ) in out
    assert f"recorded human run {second.info.run_id}" in out
    assert main(again) == 0
    assert f"already recorded: human run {second.info.run_id}" in capsys.readouterr().out
    assert len(_humans(uri)) == 2
