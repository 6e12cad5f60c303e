"""The run's artifacts the viewer page is made of, read through the caller's MLflow client.

Like ``runner.tracking.reader`` it reads with explicit run ids; it takes the client from its
caller (``Tracker.client`` at the end of a run, ``runner.tracking.reader.client`` for the
command) and imports no MLflow itself.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse
from urllib.request import url2pathname

from runner.api.trace_view import VIEWS_FILE
from runner.tracking.store import quiet_downloads as quiet_downloads  # re-exported: page.py

ARTIFACT = "viewer.html"
"""The page's artifact name on the run (and the command's default output file)."""
_JSON_FILES = (
    "summaries.json",
    "scores.json",
    "annotations.json",
    "notes.json",
    VIEWS_FILE,
)


class Client(Protocol):
    """What the viewer uses of ``mlflow.tracking.MlflowClient`` (``Tracker.client``)."""

    def get_run(self, run_id: str) -> Any:
        """The run (info, params, metrics, tags)."""

    def list_artifacts(self, run_id: str, path: str | None = None) -> Any:
        """The artifacts at ``path`` (the root when None)."""

    def download_artifacts(self, run_id: str, path: str, dst_path: str | None = None) -> str:
        """A local copy of the artifact at ``path``."""

    def log_text(self, run_id: str, text: str, artifact_file: str) -> Any:
        """Write ``text`` as the artifact ``artifact_file``."""

    def set_tag(self, run_id: str, key: str, value: Any) -> Any:
        """Set one tag on the run."""


@dataclass(frozen=True)
class RunFiles:
    """The artifacts the page is made of; a missing one is empty (a failed run has few)."""

    summaries: dict[str, str] = field(default_factory=dict)
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    annotations: dict[str, Any] | None = None
    """None when the BooookScore metric did not run (nothing is marked then)."""
    notes: dict[str, list[str]] = field(default_factory=dict)
    traces: dict[str, Any] = field(default_factory=dict)
    views: dict[str, Any] = field(default_factory=dict)
    """doc_id -> how its strategy draws its trace (``runner.api.trace_view.draw``); empty for a
    run stored before views were recorded (its steps are listed plainly)."""


def read_files(client: Client, run_id: str, artifact_uri: str | None = None) -> RunFiles:
    """The run's JSON artifacts (a missing one stays empty).

    Artifacts on this machine (a ``file:`` artifact URI, the project's default) are read
    in place; MLflow's download copies each file through its repository, about 20 ms a
    file, which for 98 traces would be most of the page's cost. Remote stores are listed
    once and only the files present are downloaded.
    """
    if artifact_uri is None:
        artifact_uri = client.get_run(run_id).info.artifact_uri
    uri = urlparse(artifact_uri or "")
    if uri.scheme == "file" and Path(url2pathname(uri.path)).is_dir():
        return _parse(Path(url2pathname(uri.path)))
    present = {a.path for a in client.list_artifacts(run_id)}
    with tempfile.TemporaryDirectory(prefix="viewer-") as tmp, quiet_downloads():
        for name in (*_JSON_FILES, "traces"):
            if name in present:
                client.download_artifacts(run_id, name, dst_path=tmp)
        return _parse(Path(tmp))


def _parse(root: Path) -> RunFiles:
    loaded = {
        n: json.loads((root / n).read_text("utf-8")) for n in _JSON_FILES if (root / n).is_file()
    }
    traces = {
        file.relative_to(root / "traces").as_posix()[: -len(".json")]: json.loads(
            file.read_text("utf-8")
        )
        for file in sorted((root / "traces").rglob("*.json"))
    }
    return RunFiles(
        summaries=loaded.get("summaries.json") or {},
        scores=loaded.get("scores.json") or {},
        annotations=loaded.get("annotations.json"),
        notes=loaded.get("notes.json") or {},
        traces=traces,
        views=loaded.get(VIEWS_FILE) or {},
    )
