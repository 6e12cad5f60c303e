"""Load the documents of a run.

The bundled sample, a folder of .txt files, a pickle, a Hugging Face dataset
(``runner/data/hf.py``), or summaries made elsewhere (``data=summaries``) with their sources
when given.

Reference summaries (for ROUGE and other reference-based metrics) come with ``data=hf`` from a
field of the rows, and with ``data=dir`` from a separate folder (``data.references``), so the
folder of sources stays a plain folder of .txt files. Its layout: ``<doc_id>.txt`` is the one
reference of a document; ``<doc_id>.<n>.txt`` (n = 1, 2, ...) are several, in the order of n.
A file whose stem is itself a document id belongs to that document, so ids with dots work.

The BooookScore authors distribute books as a pickled ``{book_id: text}`` dict. Unpickling
runs code, so we use an unpickler that refuses every global: only dicts, lists and
strings (which need no global) can come out of it.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner.api.errors import ConfigError, DataError
from runner.api.types import Document, WorkItem
from runner.data.hf import HFSpec, load_hf

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_data"


SOURCES = ("sample", "dir", "booookscore_pickle", "summaries", "hf", "none")
_NUMBERED = re.compile(r"(.+)\.(\d+)")


def load_work(
    source: str,
    path: str | None = None,
    limit: int | None = None,
    sources: str | None = None,
    *,
    references: str | None = None,
    hf: HFSpec | None = None,
) -> list[WorkItem]:
    """The job's documents: sources to summarize, or summaries (with optional sources) to score."""
    if source != "summaries":
        if sources:
            raise ConfigError(
                f"data.sources is for data=summaries only; remove it from data={source}"
            )
        docs = load_documents(source, path, limit, references=references, hf=hf)
        return [WorkItem(d.doc_id, d) for d in docs]
    given = load_summaries(path)
    texts = {d.doc_id: d for d in _load_sources(sources)} if sources else {}
    orphans = [doc_id for doc_id in given if texts and doc_id not in texts]
    if orphans:
        shown = ", ".join(orphans[:3]) + (
            f" and {len(orphans) - 3} more" if len(orphans) > 3 else ""
        )
        raise DataError(
            f"{path}: {len(orphans)} summaries have no source in data.sources={sources} ({shown}); "
            "fix their ids or drop data.sources to score without sources"
        )
    items = [WorkItem(doc_id, texts.get(doc_id), summary) for doc_id, summary in given.items()]
    return items[:limit] if limit else items


def _load_sources(sources: str) -> list[Document]:
    resolved = Path(sources).expanduser()
    if not resolved.exists():
        raise DataError(
            f"data.sources={sources} does not exist; point it at a folder of .txt files or a .pkl"
        )
    if resolved.is_dir():
        return load_text_dir(resolved)
    return load_booookscore_pickle(resolved)


def load_summaries(path: str | None) -> dict[str, str]:
    """A ``{doc_id: summary}`` JSON file, validated."""
    file = _required_path(path, "summaries")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(
            f"{file} is not UTF-8 JSON ({err}); give a {{doc_id: summary}} file"
        ) from err
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise DataError(f"{file} must map document ids to summary strings; fix the file")
    if not data:
        raise DataError(f"{file} holds no summaries; give a {{doc_id: summary}} file")
    empty = [k for k, v in data.items() if not v.strip()]
    if empty:
        raise DataError(f"{file}: the summary of {empty[0]!r} is empty; remove it or fill it")
    return dict(data)


def load_documents(
    source: str,
    path: str | None = None,
    limit: int | None = None,
    *,
    references: str | None = None,
    hf: HFSpec | None = None,
) -> list[Document]:
    """Documents for ``data.source`` ('sample', 'dir', 'booookscore_pickle', 'hf' or 'none')."""
    if references and source != "dir":
        raise ConfigError(f"data.references is for data=dir only; remove it from data={source}")
    if source == "none":
        return []
    if source == "sample":
        docs = load_text_dir(SAMPLE_DIR)
    elif source == "dir":
        docs = load_text_dir(_required_path(path, "dir"))
        docs = with_references(docs, Path(references).expanduser()) if references else docs
    elif source == "hf":
        docs = load_hf(hf or HFSpec(), path)
    elif source == "booookscore_pickle":
        docs = load_booookscore_pickle(_required_path(path, "booookscore_pickle"))
    else:
        raise ConfigError(f"data.source={source!r} is unknown; use one of: {', '.join(SOURCES)}")
    return docs[:limit] if limit else docs


def _required_path(path: str | None, source: str) -> Path:
    if not path:
        raise ConfigError(f"data={source} needs data.path=...; add data.path=/path/to/your/data")
    resolved = Path(path).expanduser()
    if not resolved.exists():
        raise DataError(f"data.path={path} does not exist; point data.path at your data")
    return resolved


def load_text_dir(folder: Path) -> list[Document]:
    """Every ``*.txt`` file of ``folder`` (sorted by name), id = file stem."""
    if not folder.is_dir():
        raise DataError(f"data.path={folder} is not a folder; give a folder of .txt files")
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise DataError(f"no .txt files in {folder}; add UTF-8 .txt files or fix data.path")
    return [_checked(file.stem, _read_utf8(inside(file, folder)), str(file)) for file in files]


def inside(file: Path, folder: Path) -> Path:
    """``file``, refused when it (or a link it is) leads outside ``folder``.

    A data folder must not be a way to read other files of the machine.
    """
    target = file.resolve()
    if not target.is_relative_to(folder.resolve()):
        raise DataError(
            f"{file} links to {target}, outside {folder}; copy the file into the folder instead"
        )
    return target


def with_references(docs: list[Document], folder: Path) -> list[Document]:
    """``docs`` with their references from ``folder`` (layout in the module docstring).

    Every file must belong to a document: a reference with no document is most often a
    misnamed file, and ignoring it would quietly score against fewer references.
    """
    if not folder.is_dir():
        raise DataError(
            f"data.references={folder} is not a folder; give a folder of <doc_id>.txt files"
        )
    ids = {d.doc_id for d in docs}
    found: dict[str, list[tuple[int, str]]] = {}
    for file in sorted(folder.glob("*.txt")):
        doc_id, number = _reference_owner(file, ids)
        text = _read_utf8(file)
        if not text.strip():
            raise DataError(f"reference {file} is empty; remove it or give it text")
        found.setdefault(doc_id, []).append((number, text))
    if not found:
        raise DataError(f"no .txt files in data.references={folder}; add <doc_id>.txt files")
    return [
        replace(d, references=tuple(t for _, t in sorted(found.get(d.doc_id, [])))) for d in docs
    ]


def _reference_owner(file: Path, ids: set[str]) -> tuple[str, int]:
    """(document id, position) of a reference file; a file matching no document is an error."""
    if file.stem in ids:
        return file.stem, 0
    numbered = _NUMBERED.fullmatch(file.stem)
    if numbered and numbered.group(1) in ids:
        return numbered.group(1), int(numbered.group(2))
    raise ConfigError(
        f"data.references: {file.name} matches no document of data.path "
        "(name it <doc_id>.txt or <doc_id>.<n>.txt)"
    )


MAX_FILE_MB = 32
"""Largest document file read: ~8M tokens, over 100x the 57k-token book; a bigger file is
almost always the wrong file, and reading it whole would cost its size several times in memory."""


def _read_utf8(file: Path) -> str:
    size_mb = file.stat().st_size / 1e6
    if size_mb > MAX_FILE_MB:
        raise DataError(
            f"{file} is {size_mb:.0f} MB, over the {MAX_FILE_MB} MB limit for one document; "
            "split it into several .txt files"
        )
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(
            f"{file} is not UTF-8 (byte {err.start}); convert it, e.g. iconv -t UTF-8"
        ) from err


def _checked(doc_id: str, text: str, origin: str) -> Document:
    if not text.strip():
        raise DataError(f"document {doc_id!r} ({origin}) is empty; remove it or give it text")
    return Document(doc_id=doc_id, text=text)


class _RestrictedUnpickler(pickle.Unpickler):
    """Refuses every global, so no class can be built and no callable run."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global '{module}.{name}' is not allowed")


def restricted_loads(data: bytes) -> Any:
    """Unpickle data that may only hold dicts, lists, strings (and other primitives)."""
    return _RestrictedUnpickler(io.BytesIO(data)).load()


def load_booookscore_pickle(file: Path) -> list[Document]:
    """Documents from the BooookScore ``{book_id: text}`` pickle, refusing anything else."""
    try:
        obj = restricted_loads(file.read_bytes())
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
        raise DataError(
            f"{file} is not a safe {{book_id: text}} pickle ({err}); convert it to .txt files"
        ) from err
    if not isinstance(obj, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in obj.items()
    ):
        raise DataError(f"{file} must hold a dict of {{book_id: text}} strings; fix the file")
    return [_checked(book_id, text, str(file)) for book_id, text in obj.items()]
