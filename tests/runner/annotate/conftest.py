"""The shared store of the annotate tests: two runs logged the way a job logs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.tracking.writer import Tracker

HIER = {f"doc-{i}": f"Hier summary {i}. It merges chunks. The end {i}." for i in range(12)}
INC = {f"doc-{i}": f"Inc summary {i}. It updates as it goes. The end {i}." for i in range(10)}
NOTES = {
    "doc-1": {
        "Hier summary 1.": {"questions": "Which one?", "types": ["entity omission"]},
        "It merges chunks.": {"questions": None, "types": None},
        "The end 1.": {"questions": "?", "types": ["language"], "unparsed": True},
    }
}


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A sqlite store with a hier run (with annotations) and an inc run; their ids."""
    root = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    ids = {"uri": uri}
    for name, summaries in (("hier", HIER), ("inc", INC)):
        tracker = Tracker(uri, "summarization", root / "artifacts")
        ids[name] = tracker.start(name, {})
        tracker.log_json(summaries, "summaries.json")
        if name == "hier":
            tracker.log_json(NOTES, "annotations.json")
        tracker.finish("FINISHED")
    return ids


@pytest.fixture
def fresh_store(tmp_path: Path) -> dict[str, str]:
    """A store of its own (hier and inc runs, as ``store``) for a test that counts human runs."""
    root = tmp_path / "fresh"
    uri = f"sqlite:///{root / 'mlflow.db'}"
    root.mkdir()
    ids = {"uri": uri}
    for name, summaries in (("hier", HIER), ("inc", INC)):
        tracker = Tracker(uri, "summarization", root / "artifacts")
        ids[name] = tracker.start(name, {})
        tracker.log_json(summaries, "summaries.json")
        tracker.finish("FINISHED")
    return ids
