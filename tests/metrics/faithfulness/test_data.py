"""Data loaders ``storysumm`` and ``fables``: the releases' summaries as a job's items.

Expected items are built here from the fixtures' raw JSON, never through the loaders.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from metrics.faithfulness import data
from metrics.faithfulness.data import fables, storysumm
from runner.api import DataError, Document
from runner.api.errors import ConfigError
from runner.config.data_config import data_config
from runner.data.sources import read_items
from tests.helpers.cli import runner_cli
from tests.metrics.faithfulness.test_releases import FABLES, STORYSUMM, repaired
from tests.runner.test_app import all_runs, run

REPAIR = "storysumm_3.json line 8: removed a stray '\", \"' before the line break"


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no note printed yet (they are printed once per process)."""
    monkeypatch.setattr(data, "_printed", set())


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("note: ")]


def test_storysumm_gives_each_summary_with_its_story_and_claims(
    capsys: pytest.CaptureFixture[str],
) -> None:
    raw = repaired(STORYSUMM.read_text())
    items = storysumm.load(path=str(STORYSUMM))
    assert [i.doc_id for i in items] == list(raw)
    for item in items:
        r = raw[item.doc_id]
        assert item.source == Document(item.doc_id, r["story"])
        assert item.summary == " ".join(r["summary"])
        assert dict(item.extras) == {"claims": tuple(r["claims"])}
    storysumm.load(path=str(STORYSUMM))  # read again (a sweep's check, then its job)
    (line,) = notes(capsys.readouterr().err)
    assert line.startswith(f"note: {REPAIR}")


def test_storysumm_split_keeps_that_split() -> None:
    raw = repaired(STORYSUMM.read_text())
    for split in ("val", "test"):
        got = [i.doc_id for i in storysumm.load(path=str(STORYSUMM), split=split)]
        assert got == [k for k, v in raw.items() if v["split"] == split]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"path": None}, "data=storysumm needs data.path="),
        ({"path": str(STORYSUMM), "split": "train"}, "data.split=train is not a StorySumm split"),
        ({"path": "/nonexistent/storysumm.json"}, "does not exist"),
    ],
)
def test_storysumm_bad_keys_are_one_line(keys: dict, message: str) -> None:
    with pytest.raises(DataError, match=message) as err:
        storysumm.load(**keys)
    assert "\n" not in str(err.value)


def test_the_config_takes_each_loaders_own_keys_and_refuses_others() -> None:
    config = data_config({"source": "storysumm", "path": "s.json", "split": "val", "limit": 2})
    assert config.values() == {"path": "s.json", "split": "val"} and config.limit == 2
    config = data_config({"source": "fables", "path": "F.zip", "books": "b", "summarizer": "GPT-4"})
    assert config.values() == {"path": "F.zip", "books": "b", "summarizer": "GPT-4"}
    with pytest.raises(ConfigError, match="data.books is not read by data=storysumm"):
        data_config({"source": "storysumm", "path": "s.json", "books": "b"})
    with pytest.raises(ConfigError, match="data.split is not read by data=fables"):
        data_config({"source": "fables", "path": "F.zip", "split": "val"})


def test_fables_without_books_gives_every_summary_without_a_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    raw = json.loads(FABLES.read_text())["FABLES"]
    items = fables.load(path=str(FABLES))
    expected = [(f"{t} -- {m}", s) for t, models in raw.items() for m, s in models.items()]
    assert [i.doc_id for i in items] == [doc for doc, _ in expected]
    for item, (_, s) in zip(items, expected, strict=True):
        assert item.source is None and item.summary == s["summary"]
        keys = sorted(s["claims"], key=int)
        assert item.extras["claims"] == tuple(s["claims"][k]["claim"] for k in keys)
    (line,) = notes(capsys.readouterr().err)
    assert "books are not released" in line and "data.books=DIR" in line


def test_fables_books_supply_the_sources_and_missing_ones_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = json.loads(FABLES.read_text())
    raw["FABLES"]["Another Book"] = raw["FABLES"]["The Small Book"]
    raw["FABLES"]["Third Book"] = raw["FABLES"]["The Small Book"]
    release = tmp_path / "FABLES.json"
    release.write_text(json.dumps(raw))
    books = tmp_path / "books"
    books.mkdir()
    (books / "The Small Book.txt").write_text("Mara left at dawn.", encoding="utf-8")
    items = fables.load(path=str(release), books=str(books))
    by_title = {i.doc_id.split(" -- ")[0]: i.source for i in items}
    assert by_title["The Small Book"] == Document("The Small Book -- MIXTRAL", "Mara left at dawn.")
    assert by_title["Another Book"] is None and by_title["Third Book"] is None
    (line,) = notes(capsys.readouterr().err)
    assert "has no <title>.txt for 2 of 3 books (Another Book, Third Book)" in line


def test_fables_books_that_do_not_exist_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"data.books=\S+ is not a folder"):
        fables.load(path=str(FABLES), books=str(tmp_path / "nowhere"))


def test_fables_summarizer_keeps_one_models_summaries_in_any_case() -> None:
    items = fables.load(path=str(FABLES), summarizer="mixtral")
    assert [i.doc_id for i in items] == ["The Small Book -- MIXTRAL"]
    with pytest.raises(DataError, match="made no FABLES summary; choose one of GPT-4, MIXTRAL"):
        fables.load(path=str(FABLES), summarizer="llama")


def test_items_reach_the_job_through_the_registry_by_name() -> None:
    items = read_items("storysumm", {"path": str(STORYSUMM), "split": None}, limit=2)
    assert [i.doc_id for i in items] == list(repaired(STORYSUMM.read_text()))[:2]


def test_a_fables_job_scores_statistics_of_summaries_without_their_book(
    stores: dict[str, str], tmp_path: Path
) -> None:
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(FABLES, tmp_path / "FABLES.json")
    result = run(
        [
            "strategy=none",
            "data=fables",
            f"data.path={tmp_path / 'FABLES.json'}",
            f"data.books={books}",
            "metrics=stats",
            *[f"{k}={v}" for k, v in stores.items()],
        ]
    )
    logged = MlflowClient(stores["tracking.uri"]).get_run(result.run_id)
    assert logged.info.status == "FINISHED"
    assert logged.data.metrics["documents"] == 2
    assert logged.data.metrics["stats/length_tokens"] > 0


def test_the_command_reads_the_release_with_one_note(
    stores: dict[str, str], tmp_path: Path
) -> None:
    proc = runner_cli(
        [
            "strategy=none",
            "data=storysumm",
            f"data.path={STORYSUMM}",
            "metrics=stats",
            *[f"{k}={v}" for k, v in stores.items()],
            f"hydra.run.dir={tmp_path / 'out'}",
        ]
    )
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    assert [n for n in notes(err) if "stray" in n] == [f"note: {REPAIR} (the release's typo)"]
    assert "Traceback" not in err
    (logged,) = all_runs(stores["tracking.uri"])
    assert logged.info.status == "FINISHED" and logged.data.metrics["documents"] == 3
    assert "on 3 document(s) from data=storysumm" in out


@pytest.mark.parametrize(
    ("case", "expect"),
    [
        ("label", ("claim 0 of 'The Small Book' by MIXTRAL has label 'Maybe'", "Inapplicable")),
        ("books", ("data.books=", "is not a folder", "<title>.txt")),
    ],
)
def test_bad_fables_input_is_one_line_and_no_run(
    stores: dict[str, str], tmp_path: Path, case: str, expect: tuple[str, ...]
) -> None:
    raw = json.loads(FABLES.read_text())
    if case == "label":
        raw["FABLES"]["The Small Book"]["MIXTRAL"]["claims"]["0"]["label"] = "Maybe"
    release = tmp_path / "FABLES.json"
    release.write_text(json.dumps(raw))
    books = ["data.books=" + str(tmp_path / "no-books")] if case == "books" else []
    proc = runner_cli(
        [
            "strategy=none",
            "data=fables",
            f"data.path={release}",
            *books,
            "metrics=stats",
            *[f"{k}={v}" for k, v in stores.items()],
            f"hydra.run.dir={tmp_path / 'out'}",
        ]
    )
    _, err = proc.communicate(timeout=600)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 2, err[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-2000:]
    assert all(words in lines[0] for words in expect), lines[0]
    assert all_runs(stores["tracking.uri"]) == []
