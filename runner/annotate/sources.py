"""Where the summaries to judge come from: MLflow runs, or ``{doc_id: summary}`` files.

A run's summaries are its ``summaries.json`` artifact (what ``runner.run.recording`` logs)
and its judge's annotations its ``annotations.json`` (BooookScore's, ``{doc_id: {sentence:
{"questions", "types"}}}``), both read through ``runner.tracking.reader``'s client, so this
package imports no MLflow. A named system's summaries are a JSON file in the same shape as
``summaries.json`` (the authors' released summaries). Every failure is a ``SourceError``: one
line naming the run or file and what to do.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.tracking.store import quiet_downloads


class SourceError(ValueError):
    """A run or file that cannot give summaries; the message is one line with the fix."""


@dataclass(frozen=True)
class System:
    """One system's summaries: an MLflow run id, or a name given on the command line."""

    name: str
    summaries: dict[str, str]
    annotations: dict[str, Any] | None = None
    """The run's BooookScore ``annotations.json`` (doc_id -> sentence -> annotation); None
    for a named system or a run without the metric."""
    run: bool = False
    """True for an MLflow run (its artifacts can be read), False for a named file."""


def named(spec: str) -> tuple[str, str]:
    """``NAME=FILE`` -> (name, file); ``SourceError`` for anything else."""
    name, eq, file = spec.partition("=")
    if not eq or not name or not file:
        raise SourceError(f"--system/--annotations take NAME=FILE, got {spec!r}")
    return name, file


def read_json(path: Path, what: str) -> Any:
    """The parsed file; ``SourceError`` naming it when it is missing or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SourceError(f"{what} file {path} does not exist; check the path") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SourceError(f"{what} file {path} is not readable JSON ({err})") from None


def summaries_file(name: str, path: Path) -> System:
    """A named system from a ``{doc_id: summary}`` JSON file (or ``{doc_id: {"summary"...}}``)."""
    data = read_json(path, "summaries")
    if isinstance(data, dict) and all(
        isinstance(v, dict) and isinstance(v.get("summary"), str) for v in data.values()
    ):  # the authors' annotation files hold each book's summary beside its spans
        data = {doc: entry["summary"] for doc, entry in data.items()}
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise SourceError(
            f"summaries file {path} (system {name}) is not an object of doc_id -> summary text"
        )
    if not data:
        raise SourceError(f"summaries file {path} (system {name}) holds no summary")
    return System(name, data)


def from_run(uri: str, run_id: str) -> System:
    """A run's ``summaries.json`` (and ``annotations.json`` when it has one)."""
    from runner.tracking.reader import client

    mlflow = client(uri)
    try:
        present = {a.path for a in mlflow.list_artifacts(run_id)}
        mlflow.get_run(run_id)
    except Exception as err:  # noqa: BLE001 - MLflow's errors, without importing MLflow
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise SourceError(
            f"cannot read run {run_id} from {uri} ({first}); copy the Run ID from the MLflow UI "
            "and check tracking.uri=URI"
        ) from None
    if "summaries.json" not in present:
        raise SourceError(
            f"run {run_id} has no summaries.json artifact (did it finish?); pick a run that "
            "summarized documents"
        )
    with tempfile.TemporaryDirectory(prefix="annotate-") as tmp, quiet_downloads():
        summaries = read_json(
            Path(mlflow.download_artifacts(run_id, "summaries.json", tmp)), "summaries"
        )
        annotations = None
        if "annotations.json" in present:
            file = mlflow.download_artifacts(run_id, "annotations.json", tmp)
            annotations = read_json(Path(file), "annotations")
    return System(run_id, {str(k): str(v) for k, v in summaries.items()}, annotations, run=True)


def gather(uri: str, runs: list[str], files: list[str]) -> list[System]:
    """The systems of the command line: runs first, then ``NAME=FILE`` ones, names unique."""
    systems = [from_run(uri, run_id) for run_id in runs]
    systems += [summaries_file(name, Path(file)) for name, file in map(named, files)]
    seen: set[str] = set()
    for system in systems:
        if system.name in seen:
            raise SourceError(f"system {system.name} is given twice; give each system once")
        seen.add(system.name)
    return systems
