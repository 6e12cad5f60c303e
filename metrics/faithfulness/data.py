"""Data loaders ``storysumm`` and ``fables``: the releases' summaries as given summaries.

``data=storysumm data.path=storysumm.json [data.split=val|test]``: the 96 summaries, each
with its story as the source. ``data=fables data.path=FABLES.json.zip [data.books=DIR]
[data.summarizer=MODEL]``: the 130 book summaries; the books are not released, so a
summary's source is ``DIR/<title>.txt`` when given and present, else None (metrics that
need the source skip it with a note; the others still score it). Each item's ``extras``
carries the release's atomic claims, for a metric that verifies given claims.

What a loader learns on the way (the repaired line, the missing books) is one
``note: ...`` line on stderr, as the job prints its own notes, once per process: a sweep
reads the data for each cell's check and again for its job.
"""

from __future__ import annotations

import sys
from pathlib import Path

from metrics.faithfulness.releases import FablesSummary, read_fables, read_storysumm
from runner.api import DataError, Document, WorkItem

SPLITS = ("val", "test")
_SHOWN_TITLES = 3
_printed: set[str] = set()


def note(line: str) -> None:
    """``line`` as one ``note:`` line on stderr, unless this process has printed it."""
    if line not in _printed:
        _printed.add(line)
        print(f"note: {line}", file=sys.stderr)


STORYSUMM_URL = "https://github.com/melaniesubbiah/storysumm (storysumm.json)"
"""Where StorySumm's release is (docs/concepts/data.md gives the file's SHA-256)."""
FABLES_URL = "https://github.com/mungg/FABLES (data/FABLES.json.zip)"
"""Where FABLES' release is (docs/concepts/data.md gives the file's SHA-256)."""


class StorySummLoader:
    """``data=storysumm``: StorySumm's summaries with their stories."""

    KEYS = ("path", "split")

    def load(self, *, path: str | None = None, split: str | None = None) -> list[WorkItem]:
        """One item per summary (of ``split`` when given), in the release's order."""
        if not path:
            raise DataError(
                f"data=storysumm needs data.path=<the release's storysumm.json>; download it from "
                f"{STORYSUMM_URL} and add data.path=storysumm.json"
            )
        if split is not None and split not in SPLITS:
            raise DataError(f"data.split={split} is not a StorySumm split; use val or test")
        entries, notes = read_storysumm(Path(path).expanduser())
        for line in notes:
            note(line)
        return [
            WorkItem(
                entry.key,
                Document(entry.key, entry.story),
                entry.summary,
                {"claims": entry.claims},
            )
            for entry in entries
            if split is None or entry.split == split
        ]


class FablesLoader:
    """``data=fables``: FABLES' summaries, with their books when ``books`` supplies them."""

    KEYS = ("path", "books", "summarizer")

    def load(
        self,
        *,
        path: str | None = None,
        books: str | None = None,
        summarizer: str | None = None,
    ) -> list[WorkItem]:
        """One item per summary (by ``summarizer`` when given), in the release's order."""
        if not path:
            raise DataError(
                f"data=fables needs data.path=<the release's FABLES.json.zip>; download it from "
                f"{FABLES_URL} and add data.path=FABLES.json.zip"
            )
        summaries = _by_summarizer(read_fables(Path(path).expanduser()), summarizer)
        texts = _books(books, sorted({s.title for s in summaries}), len(summaries))
        return [
            WorkItem(
                s.doc_id,
                Document(s.doc_id, texts[s.title]) if s.title in texts else None,
                s.summary,
                {"claims": tuple(c.claim for c in s.claims)},
            )
            for s in summaries
        ]


def _by_summarizer(summaries: list[FablesSummary], summarizer: str | None) -> list[FablesSummary]:
    """The summaries of one summarizer (named in any case), or all of them."""
    if summarizer is None:
        return summaries
    models = list(dict.fromkeys(s.model for s in summaries))
    chosen = [m for m in models if m.lower() == str(summarizer).lower()]
    if not chosen:
        raise DataError(
            f"data.summarizer={summarizer} made no FABLES summary; "
            f"choose one of {', '.join(models)}"
        )
    return [s for s in summaries if s.model == chosen[0]]


def _books(books: str | None, titles: list[str], count: int) -> dict[str, str]:
    """Title -> book text from ``books`` (``<title>.txt``); a note for what is missing."""
    if books is None:
        note(
            f"data=fables: the books are not released, so the {count} summaries have no "
            "source and source-needing metrics will skip them; give data.books=DIR of "
            "<title>.txt (the books from the FABLES authors)"
        )
        return {}
    folder = Path(books).expanduser()
    if not folder.is_dir():
        raise DataError(
            f"data.books={books} is not a folder; point it at a folder of <title>.txt books"
        )
    texts = {}
    for title in titles:
        file = folder / f"{title}.txt"
        if file.is_file():
            texts[title] = _read_book(file)
    missing = [t for t in titles if t not in texts]
    if missing:
        more = ", ..." if len(missing) > _SHOWN_TITLES else ""
        shown = ", ".join(missing[:_SHOWN_TITLES]) + more
        note(
            f"data.books={books} has no <title>.txt for {len(missing)} of {len(titles)} books "
            f"({shown}): their summaries have no source, and source-needing metrics skip them"
        )
    return texts


def _read_book(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{file} cannot be read as UTF-8 text ({err}); save it as UTF-8") from None


storysumm = StorySummLoader()
fables = FablesLoader()
