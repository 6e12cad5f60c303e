"""data=hf on tiny local datasets made here: never the hub (the tests refuse every connection)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from runner.api.errors import ConfigError, DataError
from runner.config.run_config import build_run_config
from runner.data.hf import HFSpec, field_value
from runner.data.loaders import load_documents, load_work
from tests.conftest import missing
from tests.runner.config.test_config import composed

ROWS = [
    {"id": "s1", "text": "The first story.", "summary": "One.", "summaries": ["One a.", "One b."]},
    {"id": "s2", "text": "The second story.", "summary": "Two.", "summaries": ["Two a."]},
    {"id": "s3", "text": "The third story.", "summary": "Three.", "summaries": []},
]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Skip without ``datasets`` (fail under CI=true); refuse the network; cache under tmp."""
    if importlib.util.find_spec("datasets") is None:
        missing("datasets is not installed (pip install -e '.[hf]')", "the hf extra")
    import datasets.config

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def jsonl(tmp_path: Path, rows: list[dict[str, Any]] = ROWS) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def spec(**fields: Any) -> HFSpec:
    return HFSpec(**{"text_field": "text", **fields})


def test_jsonl_with_ids_and_a_string_reference(tmp_path: Path) -> None:
    docs = load_documents(
        "hf", str(jsonl(tmp_path)), hf=spec(reference_field="summary", id_field="id")
    )
    assert [(d.doc_id, d.text, d.references) for d in docs] == [
        ("s1", "The first story.", ("One.",)),
        ("s2", "The second story.", ("Two.",)),
        ("s3", "The third story.", ("Three.",)),
    ]


def test_list_of_strings_reference_and_row_index_ids(tmp_path: Path) -> None:
    docs = load_documents("hf", str(jsonl(tmp_path)), limit=2, hf=spec(reference_field="summaries"))
    assert [(d.doc_id, d.references) for d in docs] == [
        ("0", ("One a.", "One b.")),
        ("1", ("Two a.",)),
    ]


def test_no_reference_field_gives_no_references(tmp_path: Path) -> None:
    docs = load_documents("hf", str(jsonl(tmp_path)), hf=spec(split="validation"))
    assert len(docs) == 3 and all(d.references == () for d in docs)


def test_nested_fields_like_squality(tmp_path: Path) -> None:
    row = {
        "metadata": {"passage_id": "p7"},
        "document": "A long story.",
        "questions": [
            {
                "question_text": "What is the plot?",
                "responses": [{"response_text": "R1"}, {"response_text": "R2"}],
            },
            {"question_text": "Who?", "responses": [{"response_text": "Q2"}]},
        ],
    }
    hf = HFSpec(
        text_field="document",
        reference_field="questions.0.responses.response_text",
        id_field="metadata.passage_id",
    )
    (doc,) = load_documents("hf", str(jsonl(tmp_path, [row])), hf=hf)
    assert (doc.doc_id, doc.text, doc.references) == ("p7", "A long story.", ("R1", "R2"))


def test_save_to_disk_folder_with_splits(tmp_path: Path) -> None:
    import datasets

    rows = {k: [r[k] for r in ROWS] for k in ("id", "text", "summary")}
    whole = datasets.DatasetDict(
        {
            "validation": datasets.Dataset.from_dict(rows),
            "test": datasets.Dataset.from_dict(rows).select([0]),
        }
    )
    whole.save_to_disk(str(tmp_path / "saved"))
    docs = load_documents(
        "hf", str(tmp_path / "saved"), hf=spec(split="test", reference_field="summary")
    )
    assert [(d.doc_id, d.references) for d in docs] == [("0", ("One.",))]
    with pytest.raises(
        ConfigError, match="data.split=train is not a split .* splits: test, validation"
    ):
        load_documents("hf", str(tmp_path / "saved"), hf=spec(split="train"))


def test_unknown_column_lists_the_columns(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="data.reference_field=abstract: .* columns: id, summaries, summary, text"
    ):
        load_documents("hf", str(jsonl(tmp_path)), hf=spec(reference_field="abstract"))


def test_duplicate_ids_and_empty_text_are_data_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="'x' occurs twice"):
        load_documents(
            "hf",
            str(jsonl(tmp_path, [{"i": "x", "text": "a"}, {"i": "x", "text": "b"}])),
            hf=spec(id_field="i"),
        )
    with pytest.raises(DataError, match="row 0: data.text_field=text is empty"):
        load_documents("hf", str(jsonl(tmp_path, [{"text": " "}])), hf=spec())


def test_unreadable_and_unsupported_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match="could not be read as a dataset"):
        load_documents("hf", str(bad), hf=spec())
    text = tmp_path / "data.txt"
    text.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="data=hf reads .jsonl"):
        load_documents("hf", str(text), hf=spec())


def test_local_load_turns_the_hub_off_and_restores_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets.config

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    seen: list[bool] = []
    real = datasets.load_dataset

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(datasets.config.HF_HUB_OFFLINE and os.environ["HF_HUB_OFFLINE"] == "1")
        return real(*args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", spy)
    load_documents("hf", str(jsonl(tmp_path)), hf=spec())
    assert seen == [True] and "HF_HUB_OFFLINE" not in os.environ


def test_hub_failure_is_a_one_line_data_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def offline(*args: object, **kwargs: object) -> None:
        raise ConnectionError("Couldn't reach the Hub\nmore detail")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError, match="needs internet") as err:
        load_documents("hf", hf=spec(name="someone/squality"))
    assert "\n" not in str(err.value)


def test_config_validates_and_passes_the_fields(tmp_path: Path) -> None:
    path = jsonl(tmp_path)
    raw = composed(
        "data=hf",
        f"data.path={path}",
        "data.text_field=text",
        "data.reference_field=summaries",
        "data.id_field=id",
    )
    data = build_run_config(raw).data
    assert data.hf == HFSpec(
        "pszemraj/SQuALITY-v1.3", "validation", None, "text", "summaries", "id"
    )
    items = load_work(data.source, data.path, data.limit, references=data.references, hf=data.hf)
    assert [i.doc_id for i in items] == ["s1", "s2", "s3"]
    assert items[0].source is not None and items[0].source.references == ("One a.", "One b.")


def test_config_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="data=hf needs data.name"):
        build_run_config(composed("data=hf", "data.name=null"))
    with pytest.raises(ConfigError, match="data.text_field is for data=hf only"):
        build_run_config(composed("data=sample", "+data.text_field=text"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(
        ConfigError, match=r"^data=hf needs the datasets package: pip install -e '\.\[hf\]'$"
    ):
        build_run_config(composed("data=hf"))


def test_field_paths() -> None:
    row = {"a": [{"b": "x"}, {"b": "y"}], "c": {"d": 1}}
    assert field_value(row, "a.b", "reference_field") == ["x", "y"]
    assert field_value(row, "a.1.b", "reference_field") == "y"
    assert field_value(row, "c.d", "id_field") == 1
    with pytest.raises(ConfigError, match="data.id_field=a.5.b: no '5'"):
        field_value(row, "a.5.b", "id_field")
