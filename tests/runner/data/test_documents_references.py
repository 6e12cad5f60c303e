"""data=dir with a references folder: <doc_id>.txt or <doc_id>.<n>.txt, every file owned."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.api.errors import ConfigError, DataError
from runner.config.run_config import build_run_config
from runner.data.loaders import load_documents, load_work
from tests.runner.config.test_config import composed


@pytest.fixture
def books(tmp_path: Path) -> Path:
    folder = tmp_path / "books"
    folder.mkdir()
    for doc_id in ("alpha", "beta", "gamma.v2"):
        (folder / f"{doc_id}.txt").write_text(f"The story {doc_id}.", encoding="utf-8")
    return folder


def refs(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "refs"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_one_and_several_references(books: Path, tmp_path: Path) -> None:
    folder = refs(
        tmp_path,
        {
            "alpha.txt": "A.",
            "beta.2.txt": "B two.",
            "beta.10.txt": "B ten.",
            "beta.1.txt": "B one.",
        },
    )
    docs = {d.doc_id: d for d in load_documents("dir", str(books), references=str(folder))}
    assert docs["alpha"].references == ("A.",)
    assert docs["beta"].references == ("B one.", "B two.", "B ten.")  # numeric order
    assert docs["gamma.v2"].references == ()


def test_an_id_with_a_dot_owns_its_exact_file(books: Path, tmp_path: Path) -> None:
    folder = refs(tmp_path, {"gamma.v2.txt": "G.", "gamma.v2.1.txt": "G one."})
    docs = {d.doc_id: d for d in load_documents("dir", str(books), references=str(folder))}
    assert docs["gamma.v2"].references == ("G.", "G one.")


def test_a_reference_without_a_document_is_a_one_line_config_error(
    books: Path, tmp_path: Path
) -> None:
    folder = refs(tmp_path, {"alpha.txt": "A.", "delta.1.txt": "No such story."})
    with pytest.raises(ConfigError, match=r"delta\.1\.txt matches no document") as err:
        load_documents("dir", str(books), references=str(folder))
    assert "\n" not in str(err.value)


def test_limit_applies_after_matching(books: Path, tmp_path: Path) -> None:
    folder = refs(tmp_path, {"beta.txt": "B."})
    (doc,) = load_documents("dir", str(books), limit=1, references=str(folder))
    assert doc.doc_id == "alpha" and doc.references == ()


@pytest.mark.parametrize(
    "files,error,message",
    [
        ({"alpha.txt": "  \n"}, DataError, "alpha.txt is empty"),
        ({}, DataError, "no .txt files in data.references"),
    ],
)
def test_bad_reference_folders(
    books: Path, tmp_path: Path, files: dict[str, str], error: type[Exception], message: str
) -> None:
    folder = refs(tmp_path, files)
    with pytest.raises(error, match=message):
        load_documents("dir", str(books), references=str(folder))


def test_references_folder_must_exist(books: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is not a folder"):
        load_documents("dir", str(books), references=str(tmp_path / "missing"))


def test_references_only_with_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="data.references is for data=dir only"):
        load_work("sample", references=str(tmp_path))
    with pytest.raises(ConfigError, match="data.references is for data=dir only"):
        build_run_config(composed("data=sample", f"+data.references={tmp_path}"))


def test_config_carries_references(books: Path, tmp_path: Path) -> None:
    folder = refs(tmp_path, {"alpha.txt": "A."})
    config = build_run_config(
        composed("data=dir", f"data.path={books}", f"data.references={folder}")
    )
    assert config.data.references == str(folder) and config.data.hf is None
    items = load_work(
        config.data.source, config.data.path, references=config.data.references, hf=config.data.hf
    )
    assert items[0].source is not None and items[0].source.references == ("A.",)


def test_unknown_data_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="data.colour is not a data setting"):
        build_run_config(composed("data=sample", "+data.colour=red"))
