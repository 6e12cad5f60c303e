"""The ``data`` block of a run's config: where the documents come from, checked.

Each source reads its own keys (``SOURCE_KEYS``); a key set for another source is refused
with one line naming the source that reads it, never silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from runner.api.errors import ConfigError
from runner.data.hf import HFSpec, require_datasets
from runner.data.sources import HF_KEYS, SOURCE_KEYS
from runner.plugins.registry import find, load


@dataclass(frozen=True)
class DataConfig:
    """Where the documents (or the summaries to score) come from."""

    source: str
    """'sample', 'dir', 'booookscore_pickle', 'summaries', 'hf', 'none', or a data loader
    plugin (``runner/plugins/registry.py``)."""
    path: str | None = None
    """Folder or file for 'dir', 'booookscore_pickle' and 'summaries'; a local copy for 'hf'."""
    limit: int | None = None
    """Use only the first N documents."""
    sources: str | None = None
    """'summaries' only: the source texts (a folder of .txt files or a pickle)."""
    references: str | None = None
    """'dir' only: a folder of reference summaries, <doc_id>.txt or <doc_id>.<n>.txt."""
    name: str | None = None
    """'hf' only: the dataset's hub id (needs internet unless ``path`` holds a local copy)."""
    split: str | None = None
    """'hf' only: the split to load."""
    config: str | None = None
    """'hf' only: the dataset's configuration name."""
    text_field: str | None = None
    """'hf' only: the column (or dotted path) holding the text."""
    reference_field: str | None = None
    """'hf' only: the column (or dotted path) holding a reference string or a list of them."""
    id_field: str | None = None
    """'hf' only: the column (or dotted path) holding the document id; null = the row index."""
    options: dict[str, Any] = field(default_factory=dict)
    """A plugin source's own keys (those its ``KEYS`` declare), as given."""

    def values(self) -> dict[str, Any]:
        """The keys the source reads -> their values, for its ``load`` (``limit`` apart)."""
        if self.source not in SOURCE_KEYS:
            return dict(self.options)
        return {k: getattr(self, k) for k in SOURCE_KEYS[self.source] if k != "limit"}

    @property
    def hf(self) -> HFSpec | None:
        """The dataset settings of 'hf' (None for every other source)."""
        if self.source != "hf":
            return None
        return HFSpec(
            self.name, self.split, self.config, self.text_field, self.reference_field, self.id_field
        )


_NEEDS_PATH = {
    "dir": "a folder of UTF-8 .txt files",
    "booookscore_pickle": "the BooookScore {book_id: text} pickle",
    "summaries": "a {doc_id: summary} JSON file",
}
_PATH_SOURCES = {
    "dir": "a folder of .txt files",
    "booookscore_pickle": "a .pkl file",
    "summaries": "a summaries JSON",
    "hf": "a local dataset copy",
}


def data_config(raw: dict[str, Any] | None) -> DataConfig:
    """The ``data`` block, checked: known keys, and each key only with the source that reads it."""
    raw = dict(raw or {"source": "none"})
    if raw.get("source") not in SOURCE_KEYS:
        return _plugin_source(raw)
    known = [f.name for f in fields(DataConfig) if f.name != "options"]
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"data.{unknown[0]} is not a data setting; valid: {', '.join(known)}")
    data = DataConfig(**raw)
    _refuse_stray_keys(data)
    _check_limit(data.limit)
    if data.source in _NEEDS_PATH and not data.path:
        raise ConfigError(
            f"data={data.source} needs data.path=<{_NEEDS_PATH[data.source]}>; "
            "add it to the command"
        )
    if data.source == "hf":
        require_datasets()
        if not (data.name or data.path) or not data.text_field:
            raise ConfigError(
                "data=hf needs data.name=<hub id> (or data.path=<local copy>) and data.text_field"
            )
    return data


def _refuse_stray_keys(data: DataConfig) -> None:
    """A key set that the chosen source does not read: one line naming the source that does."""
    reads = SOURCE_KEYS[data.source]
    for key in ("path", "references", "sources", *HF_KEYS):
        if getattr(data, key) is None or key in reads:
            continue
        owners = [s for s, keys in SOURCE_KEYS.items() if key in keys]
        if key == "path":
            hint = "; ".join(f"data={s} for {what}" for s, what in _PATH_SOURCES.items())
            raise ConfigError(
                f"data.path={data.path} is ignored by data={data.source}, which reads no path; "
                f"choose the source it is for: {hint}"
            )
        raise ConfigError(
            f"data.{key} is for data={' or data='.join(owners)} only, "
            f"and data={data.source} ignores it; remove it, or add data={owners[0]}"
        )


def _check_limit(limit: Any) -> None:
    """``limit``: the first N documents (N >= 1), or null for all.

    A negative N once dropped the last document through a Python slice.
    """
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(
            f"data.limit={limit} must be a whole number >= 1 (the first N documents); "
            "data.limit=null uses them all"
        )


def _plugin_source(raw: dict[str, Any]) -> DataConfig:
    """A source from a data loader plugin: only the keys its ``KEYS`` declare (and ``limit``)."""
    source = str(raw.pop("source", None))
    plugin = find("data", source)
    reads = tuple(load(plugin).KEYS)
    limit = raw.pop("limit", None)
    stray = sorted(k for k, v in raw.items() if k not in reads and v is not None)
    if stray:
        raise ConfigError(
            f"data.{stray[0]} is not read by data={source} ({plugin.origin}), which reads "
            f"{', '.join(reads) or 'no key'} and limit; remove it"
        )
    _check_limit(limit)
    return DataConfig(source, limit=limit, options={k: raw.get(k) for k in reads})
