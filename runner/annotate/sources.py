"""Where the summaries to judge come from: MLflow runs, or ``{doc_id: summary}`` files.

A run's summaries are its ``summaries.json`` artifact (what ``runner.run.recording`` logs),
read through ``runner.tracking.reader``'s client, so this package imports no MLflow; a task
kind may read its other artifacts (BooookScore's ``annotations.json``, faithfulness's
``claims.json``) and its documents again (through the data loader its logged config names)
through the ``runner.api.TaskSystem`` it is given. A named system's summaries are a JSON file
in the same shape as ``summaries.json`` (the authors' released summaries). Every failure is a
``SourceError``: one line naming the run or file and what to do.
"""

from __future__ import annotations

import json
import tempfile
from functools import cache, partial
from pathlib import Path
from typing import Any

import yaml

from runner.api.human_task import TaskSystem
from runner.api.types import WorkItem
from runner.tracking.store import quiet_downloads


class SourceError(ValueError):
    """A run or file that cannot give summaries; the message is one line with the fix."""


System = TaskSystem
"""One system's summaries: an MLflow run id, or a name given on the command line."""


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
    return TaskSystem(
        run_id,
        {str(k): str(v) for k, v in summaries.items()},
        is_run=True,
        artifact=partial(_artifact, uri, run_id, frozenset(present)),
        items=cache(partial(run_items, uri, run_id, frozenset(present))),
    )


def _artifact(uri: str, run_id: str, present: frozenset[str], name: str) -> Any:
    """The run's artifact ``name`` parsed (YAML for ``.yaml``, else JSON), None if absent."""
    from runner.tracking.reader import client

    if name not in present:
        return None
    with tempfile.TemporaryDirectory(prefix="annotate-") as tmp, quiet_downloads():
        file = Path(client(uri).download_artifacts(run_id, name, tmp))
        if name.endswith((".yaml", ".yml")):
            return yaml.safe_load(file.read_text(encoding="utf-8"))
        return read_json(file, f"run {run_id}'s {name}")


def run_items(uri: str, run_id: str, present: frozenset[str]) -> tuple[list[WorkItem], str]:
    """The run's documents read again through the data loader its config names, and ''.

    Or no items and why not: runs log no source text, so a moved file or an unreleased book
    cannot be shown.
    """
    from runner.config.data_config import data_config
    from runner.data.sources import read_items

    config = _artifact(uri, run_id, present, "config.yaml")
    block = config.get("data") if isinstance(config, dict) else None
    if not isinstance(block, dict):
        return [], "the run logged no config.yaml with a data block"
    try:
        data = data_config(dict(block))
        items = read_items(data.source, data.values(), data.limit)
    except Exception as err:  # noqa: BLE001 - any loader's failure: the caller notes it
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return [], f"its data={block.get('source')} cannot be read here: {first}"
    return list(items), ""


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
