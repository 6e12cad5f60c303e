"""Documents from a Hugging Face dataset (``data=hf``), through the optional ``datasets`` package.

Two ways in, and only the first needs the network:

- ``name`` (a hub id such as SQuALITY's) with ``split`` and ``config``: ``load_dataset`` fetches
  it into the Hugging Face cache (later runs read the cache);
- ``path``: a local copy, read with the hub switched off (``HF_HUB_OFFLINE`` semantics), so a
  local run can never reach the hub by accident: a folder written by ``save_to_disk``, any other
  folder of data files (e.g. a clone of the dataset's hub repository), or one ``.jsonl``/``.json``/
  ``.csv``/``.parquet`` file (loaded as the split named by ``split``).

Fields are column names, or dotted paths into nested rows (``questions.0.responses.response_text``:
a number indexes a list, a name applied to a list is taken from each item), because SQuALITY
keeps its reference summaries inside per-question lists. ``datasets`` is imported only here and
only when ``data=hf`` loads, so every other run pays nothing for it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.api.errors import ConfigError, DataError
from runner.api.types import Document

INSTALL = "data=hf needs the datasets package: pip install -e '.[hf]'"
FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
"""Local file suffix -> the ``datasets`` packaged builder that reads it (no hub involved)."""


@dataclass(frozen=True)
class HFSpec:
    """Which dataset, split and fields make the documents."""

    name: str | None = None
    """Hub id (needs internet, or the Hugging Face cache); ignored when a local path is given."""
    split: str | None = None
    """Split to load; None takes the only split there is."""
    config: str | None = None
    """The dataset's configuration name (``load_dataset(name, config)``), if it has several."""
    text_field: str | None = None
    """Field holding the text to summarize."""
    reference_field: str | None = None
    """Field holding the reference summaries: a string or a list of strings (None: none)."""
    id_field: str | None = None
    """Field holding the document id (None: the row index)."""


def require_datasets() -> None:
    """A one-line ConfigError when ``datasets`` is not installed (checked without importing it)."""
    if importlib.util.find_spec("datasets") is None:
        raise ConfigError(INSTALL)


def load_hf(spec: HFSpec, path: str | None) -> list[Document]:
    """The documents of ``spec``'s split, from the local ``path`` when given, else from the hub."""
    require_datasets()
    if not spec.text_field:
        raise ConfigError("data=hf needs data.text_field=<the column holding the text>")
    if path:
        with _hub_off():
            rows = _local_rows(spec, Path(path).expanduser())
    elif spec.name:
        rows = _hub_rows(spec)
    else:
        raise ConfigError("data=hf needs data.name=<hub id> or data.path=<local copy>")
    documents = [_document(spec, index, row) for index, row in enumerate(rows)]
    _check_unique(documents)
    return documents


@contextmanager
def _hub_off() -> Iterator[None]:
    """Switch the hub off for a local load, restoring the caller's settings afterwards.

    ``datasets`` and ``huggingface_hub`` read HF_HUB_OFFLINE when imported, so both the
    environment (for a first import) and their module constants (after it) are set.
    """
    saved_env = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    os.environ.update({k: "1" for k in saved_env})
    import datasets.config
    import huggingface_hub.constants

    saved = (datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE)
    datasets.config.HF_HUB_OFFLINE = huggingface_hub.constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE = saved
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _local_rows(spec: HFSpec, path: Path) -> Any:
    import datasets

    if not path.exists():
        raise DataError(
            f"data.path={path} does not exist; point it at a save_to_disk folder or a data file"
        )
    try:
        if path.is_dir() and _saved_to_disk(path):
            return _split(datasets.load_from_disk(str(path)), spec.split, path)
        if path.is_dir():
            return _split(datasets.load_dataset(str(path), spec.config), spec.split, path)
        builder = FILE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise ConfigError(
                f"data.path={path}: data=hf reads {', '.join(FILE_BUILDERS)} files "
                "or a save_to_disk folder"
            )
        split = spec.split or "train"
        return datasets.load_dataset(builder, data_files={split: str(path)}, split=split)
    except (ConfigError, DataError):
        raise
    except Exception as err:  # datasets raises many unrelated types for unreadable data
        raise DataError(
            f"data.path={path} could not be read as a dataset ({_first_line(err)})"
        ) from err


def _saved_to_disk(folder: Path) -> bool:
    """True for a folder written by ``Dataset.save_to_disk`` or ``DatasetDict.save_to_disk``."""
    return (folder / "state.json").exists() or (folder / "dataset_dict.json").exists()


def _hub_rows(spec: HFSpec) -> Any:
    import datasets

    try:
        loaded = datasets.load_dataset(spec.name, spec.config)
    except Exception as err:  # network, auth, unknown id, unknown config: all end the same way
        raise DataError(
            f"data.name={spec.name} could not be loaded from the Hugging Face hub "
            f"({_first_line(err)}); it needs internet (or the HF cache): "
            "or save a local copy and give data.path=..."
        ) from err
    return _split(loaded, spec.split, spec.name)


def _split(loaded: Any, split: str | None, origin: object) -> Any:
    """One split of a DatasetDict (or the Dataset itself), naming the splits there are."""
    if not hasattr(loaded, "keys"):
        return loaded
    splits = sorted(loaded.keys())
    if split in loaded:
        return loaded[split]
    if split is None and len(splits) == 1:
        return loaded[splits[0]]
    raise ConfigError(f"data.split={split} is not a split of {origin}; splits: {', '.join(splits)}")


def _document(spec: HFSpec, index: int, row: dict[str, Any]) -> Document:
    text = field_value(row, str(spec.text_field), "text_field")
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"row {index}: data.text_field={spec.text_field} is empty or not text")
    doc_id = str(index) if not spec.id_field else str(field_value(row, spec.id_field, "id_field"))
    references = _references(row, spec.reference_field, doc_id) if spec.reference_field else ()
    return Document(doc_id=doc_id, text=text, references=references)


def _references(row: dict[str, Any], field: str, doc_id: str) -> tuple[str, ...]:
    value = field_value(row, field, "reference_field")
    values = [value] if isinstance(value, str) or value is None else value
    if not isinstance(values, list) or not all(v is None or isinstance(v, str) for v in values):
        raise DataError(
            f"document {doc_id!r}: data.reference_field={field} "
            "must hold a string or a list of strings"
        )
    return tuple(v for v in values if v and v.strip())


def field_value(row: Any, field: str, key: str) -> Any:
    """The value at a column name or dotted path (see the module docstring)."""
    value = row
    for part in field.split("."):
        value = _step(value, part, field, key, row)
    return value


def _step(value: Any, part: str, field: str, key: str, row: Any) -> Any:
    if isinstance(value, list) and part.isdigit():
        if int(part) < len(value):
            return value[int(part)]
    elif isinstance(value, list):
        return [_step(item, part, field, key, row) for item in value]
    elif isinstance(value, dict) and part in value:
        return value[part]
    columns = ", ".join(sorted(row)) if isinstance(row, dict) else "?"
    raise ConfigError(f"data.{key}={field}: no {part!r} in the rows; columns: {columns}")


def _check_unique(documents: list[Document]) -> None:
    seen: set[str] = set()
    for document in documents:
        if document.doc_id in seen:
            raise DataError(
                f"document id {document.doc_id!r} occurs twice; choose another data.id_field"
            )
        seen.add(document.doc_id)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
