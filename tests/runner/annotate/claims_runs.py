"""Judged runs for the claims task's tests, logged as a job logs them (through runner.tracking).

A run holds ``summaries.json``, ``config.yaml`` (its ``data`` block: the built-in
``summaries`` source with a folder of sources, so the export reads each source again) and,
when it judged claims, ``claims.json`` in the shared contract's shape. The claims are stored
out of index order, as parallel judging may write them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from runner.tracking.writer import Tracker

SOURCES = {
    "story-1": "Ann grew up on a farm. One spring she left for the city. The barn burned later.",
    "story-2": "A ship sailed north in winter. The crew grew restless. The captain fell ill.",
}
SUMMARIES = {
    "story-1": "Ann left the farm for the city. The barn burned.",
    "story-2": "A ship sailed south. The captain died.",
}
CLAIMS = {
    "story-1": ("Ann left the farm.", "Ann went to the city.", "The barn burned."),
    "story-2": ("A ship sailed south.", "The captain died."),
}


def data_files(root: Path) -> dict[str, Any]:
    """The summaries file and the sources folder of the ``summaries`` source; its data block."""
    books = root / "sources"
    books.mkdir(parents=True, exist_ok=True)
    for doc, text in SOURCES.items():
        (books / f"{doc}.txt").write_text(text, encoding="utf-8")
    path = root / "summaries.json"
    path.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    return {"source": "summaries", "path": str(path), "sources": str(books), "limit": None}


def claims_json(claims: dict[str, tuple[str, ...]]) -> dict[str, list[dict[str, Any]]]:
    """The contract's ``claims.json``, each document's entries in reverse index order."""
    return {
        doc: [
            {"index": i, "claim": text, "supported": True, "answer": "Yes.", "passages": []}
            for i, text in reversed(list(enumerate(texts)))
        ]
        for doc, texts in claims.items()
    }


def log_run(
    uri: str,
    root: Path,
    data: dict[str, Any],
    summaries: dict[str, str],
    claims: dict[str, tuple[str, ...]] | None,
) -> str:
    """One FINISHED run with these artifacts; its id."""
    tracker = Tracker(uri, "summarization", root / "artifacts")
    run_id = tracker.start("judged", {})
    tracker.log_text(yaml.safe_dump({"data": data}), "config.yaml")
    tracker.log_json(summaries, "summaries.json")
    if claims is not None:
        tracker.log_json(claims_json(claims), "claims.json")
    tracker.finish("FINISHED")
    return run_id


def logged_run(
    root: Path,
    summaries: dict[str, str],
    experiment: str = "summarization",
    params: dict[str, str] | None = None,
    scores: dict[str, dict[str, float]] | None = None,
) -> tuple[str, str]:
    """(store uri, run id) of a FINISHED run holding ``summaries`` (and ``scores.json``), in
    a store of its own under ``root``, logged as a job logs them (no model, no job: fast)."""
    uri = f"sqlite:///{root / 'mlflow.db'}"
    tracker = Tracker(uri, experiment, root / "artifacts")
    run_id = tracker.start("judged", {})
    if params:
        tracker.log_params(params)
    tracker.log_json(summaries, "summaries.json")
    if scores is not None:
        tracker.log_json(scores, "scores.json")
    tracker.finish("FINISHED")
    return uri, run_id
