"""Summaries made elsewhere: score another system's (or the paper's released) summaries.

The file is the BooookScore authors' format, ``{doc_id: summary}`` JSON. The runner asks
``document_ids`` which documents to score (source texts are optional: a metric that needs
one is skipped with a note when it is absent), and calls ``summarize`` with each id.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from runner.errors import ConfigError, DataError
from runner.types import LLM, Chunk, StrategyResult, TraceStep


@functools.lru_cache(maxsize=8)
def load_summaries(summaries: str) -> dict[str, str]:
    """The ``{doc_id: summary}`` file, validated."""
    if not summaries:
        raise ConfigError(
            "strategy=precomputed needs strategy.summaries=FILE.json ({doc_id: summary}); add it"
        )
    path = Path(summaries).expanduser()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise DataError(f"strategy.summaries={summaries} does not exist; fix the path") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{summaries} is not UTF-8 JSON ({err}); give a {{doc_id: summary}} file") from err
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise DataError(f"{summaries} must map document ids to summary strings; fix the file")
    empty = [k for k, v in data.items() if not v.strip()]
    if empty:
        raise DataError(f"{summaries}: summary of {empty[0]!r} is empty; remove it or fill it")
    return dict(data)


def document_ids(summaries: str) -> list[str]:
    """The ids to score, in file order."""
    return list(load_summaries(summaries))


def summarize(chunks: list[Chunk], llm: LLM, *, summaries: str = "", doc_id: str = "") -> StrategyResult:
    """The stored summary of ``doc_id``; no model call."""
    summary = load_summaries(summaries)[doc_id]
    step = TraceStep(kind="precomputed", call_id="", detail={"file": summaries, "text": summary})
    return StrategyResult(summary=summary, trace=(step,), counters={"calls": 0.0})
