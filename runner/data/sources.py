"""The built-in data sources as plugins, and reading a job's documents through the registry.

Each source, built-in or a researcher's own, is a data loader: ``KEYS`` (the ``data.*``
keys it reads) and ``load(*, <keys>)`` returning ``Document`` objects to summarize, or
``WorkItem`` objects (summaries made elsewhere, for ``strategy=none``). The built-ins are
entry points of this package (``summarization_runner.data`` in pyproject.toml) pointing at
the objects below, found and loaded exactly as a researcher's are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runner.api.errors import DataError
from runner.api.types import Document, WorkItem
from runner.data.hf import HFSpec
from runner.data.loaders import load_work
from runner.plugins.registry import find, load

HF_KEYS = ("name", "split", "config", "text_field", "reference_field", "id_field")
"""``data=hf``'s settings, in ``HFSpec``'s order."""
SOURCE_KEYS: dict[str, tuple[str, ...]] = {
    "sample": ("limit",),
    "none": (),
    "dir": ("path", "references", "limit"),
    "booookscore_pickle": ("path", "limit"),
    "summaries": ("path", "sources", "limit"),
    "hf": ("path", *HF_KEYS, "limit"),
}
"""The keys each built-in source reads; any other key set is refused, never silently ignored
(``data.path=books`` without ``data=dir`` once summarized the bundled sample instead).
``limit`` (the first N documents) is applied by the runner for every source."""


class BuiltInSource:
    """A built-in source: its keys, and ``load`` through ``runner/data/loaders.py``."""

    def __init__(self, name: str) -> None:
        """``name``: a key of ``SOURCE_KEYS``."""
        self.name = name
        self.KEYS = tuple(k for k in SOURCE_KEYS[name] if k != "limit")

    def load(self, **values: Any) -> list[WorkItem]:
        """The source's items (``values``: its keys, unset ones None)."""
        hf = HFSpec(*(values.get(k) for k in HF_KEYS)) if self.name == "hf" else None
        return load_work(
            self.name,
            values.get("path"),
            None,
            values.get("sources"),
            references=values.get("references"),
            hf=hf,
        )


sample = BuiltInSource("sample")
none = BuiltInSource("none")
dir = BuiltInSource("dir")  # noqa: A001 - the entry point's name is the source's, data=dir
booookscore_pickle = BuiltInSource("booookscore_pickle")
summaries = BuiltInSource("summaries")
hf = BuiltInSource("hf")


def read_items(source: str, values: dict[str, Any], limit: int | None) -> list[WorkItem]:
    """The job's items from the source ``data.source`` names (the first ``limit`` of them)."""
    loader = load(find("data", source))
    got: Sequence[Document | WorkItem] = loader.load(**values)
    if not isinstance(got, (list, tuple)):
        raise DataError(f"data={source}: load returned {type(got).__name__}, not a list")
    items = [_item(source, x) for x in got]
    return items[:limit] if limit else items


def for_strategy(items: list[WorkItem], source: str, strategy: str) -> list[WorkItem]:
    """The items as the strategy uses them: given summaries for ``strategy=none``, else sources.

    A source that gives summaries with their sources (StorySumm) serves both: ``strategy=none``
    scores the given summaries; any other strategy summarizes the sources, and the given
    summaries and what the data says about them (``extras``: their claims) are left out, so
    no metric reads another summary's claims.
    """
    if strategy == "none":
        lacking = [i.doc_id for i in items if i.summary is None]
        if lacking:
            raise DataError(
                f"data={source} gives no summary for {len(lacking)} document(s) "
                f"({', '.join(lacking[:3])}); strategy=none scores given summaries: choose a "
                "strategy to summarize them"
            )
        return items
    sourceless = [i.doc_id for i in items if i.source is None]
    if sourceless:
        raise DataError(
            f"data={source} gives summaries without their sources ({', '.join(sourceless[:3])}); "
            f"use strategy=none to score them, or give the sources"
        )
    return [i if i.summary is None else WorkItem(i.doc_id, i.source) for i in items]


def _item(source: str, got: object) -> WorkItem:
    if isinstance(got, WorkItem):
        return got
    if isinstance(got, Document):
        return WorkItem(got.doc_id, got)
    raise DataError(
        f"data={source}: load returned a {type(got).__name__}; return runner.api.Document objects"
    )
