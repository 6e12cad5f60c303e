"""The read side of results: MLflow runs back as plain rows.

What inspect_ai's ``evals_df``/``samples_df`` are to eval logs: ``find_runs`` gives one
``RunRecord`` per run, ``runs_frame`` one DataFrame row per run, and ``scores_frame`` one row
per (run, document) from each run's ``scores.json``. Like ``runner.tracking.writer`` it uses
``MlflowClient`` with explicit ids, never the fluent API's process-global active run.
pandas is imported inside the frame functions so that reading a few runs stays cheap. Whether
a sweep cell is done is decided in ``runner.tracking.done``.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from runner.tracking.done import Row, newest_clean
from runner.tracking.tags import (
    FAILED_DOCUMENTS_TAG,
    FINGERPRINT_TAG,
    PARENT_TAG,
    UNDECIDED_TAG,
)

if TYPE_CHECKING:
    import pandas

STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")
PAGE_SIZE = 1000  # rows per search request; we always page, so this only trades calls for memory
_NEWEST_FIRST = ["attributes.start_time DESC"]  # the store adds run_id as a tie-breaker
RUN_COLUMNS = [
    "run_id",
    "run_name",
    "status",
    "start_time",
    "end_time",
    "fingerprint",
    "parent_run_id",
]
SCORE_COLUMNS = ["run_id", "run_name", "status", "fingerprint", "doc_id"]


@dataclass(frozen=True)
class RunRecord:
    """One MLflow run as plain values, detached from the client."""

    run_id: str
    """MLflow's run id (32 hex chars)."""
    run_name: str
    """The name the job gave the run."""
    experiment_id: str
    """Id of the experiment the run belongs to."""
    status: str
    """RUNNING, SCHEDULED, FINISHED, FAILED or KILLED."""
    start_time: int
    """Start, in ms since the epoch: "newest" always means the latest start."""
    end_time: int | None
    """End in ms since the epoch; None while the run has not terminated."""
    params: dict[str, str] = field(hash=False)
    """Params exactly as logged (MLflow stores them as strings)."""
    metrics: dict[str, float] = field(hash=False)
    """Latest value of each metric."""
    tags: dict[str, str] = field(hash=False)
    """All tags, MLflow's own ``mlflow.*`` ones included."""

    @property
    def fingerprint(self) -> str | None:
        """Identity of the experiment (tag ``fingerprint``); None when not tagged."""
        return self.tags.get(FINGERPRINT_TAG)

    @property
    def parent_run_id(self) -> str | None:
        """The sweep's parent run id, for sweep children; else None."""
        return self.tags.get(PARENT_TAG)

    @property
    def failed_documents(self) -> int:
        """Documents the run skipped after they failed (``on_error=continue``); 0 for most runs."""
        return int(self.tags.get(FAILED_DOCUMENTS_TAG, "0") or 0)

    @property
    def undecided(self) -> list[str]:
        """Headline values its judge decided for no document (``UNDECIDED_TAG``); [] for most."""
        try:
            keys = json.loads(self.tags.get(UNDECIDED_TAG) or "[]")
        except ValueError:
            return []
        return [str(k) for k in keys] if isinstance(keys, list) else []

    @classmethod
    def from_run(cls, run: Run) -> RunRecord:
        """Copy the values out of an MLflow ``Run``."""
        info, data = run.info, run.data
        return cls(
            run_id=info.run_id,
            run_name=info.run_name or "",
            experiment_id=str(info.experiment_id),
            status=info.status,
            start_time=int(info.start_time),
            end_time=int(info.end_time) if info.end_time is not None else None,
            params=dict(data.params),
            metrics={k: float(v) for k, v in data.metrics.items()},
            tags=dict(data.tags),
        )


def client(uri: str) -> MlflowClient:
    """A client of the store at ``uri``, for readers that need more than rows (artifacts)."""
    return MlflowClient(tracking_uri=uri)


def served_model_runs(
    uri: str, model: str, limit: int, roles: tuple[str, ...], files: tuple[str, ...], into: Path
) -> list[tuple[Path, float]]:
    """(folder, seconds from start to end) of a server's newest finished runs of ``model``.

    ``model`` is matched against any role's ``<role>.model`` param; each folder holds those
    of ``files`` the run has, downloaded into ``into``: what ``sqlite_peek.model_run_folders``
    reads from a sqlite store's own folders. Empty when the server cannot be asked.
    """
    mlflow = client(uri)
    try:
        ids = [e.experiment_id for e in mlflow.search_experiments()]
        found: dict[str, Run] = {}
        for role in roles:
            query = (
                f"params.`{role}.model` = '{_literal(model)}' AND attributes.status = 'FINISHED'"
            )
            for run in mlflow.search_runs(
                ids, query, max_results=limit, order_by=["attributes.start_time DESC"]
            ):
                found[run.info.run_id] = run
    except MlflowException:
        return []
    newest = sorted(found.values(), key=lambda r: -int(r.info.start_time))[:limit]
    folders = []
    for run in newest:
        if run.info.end_time is None:
            continue
        folder = into / run.info.run_id
        folder.mkdir(parents=True, exist_ok=True)
        for name in files:
            try:
                mlflow.download_artifacts(run.info.run_id, name, str(folder))
            except (MlflowException, OSError):
                continue  # a run without the file: the reader does without it
        seconds = (int(run.info.end_time) - int(run.info.start_time)) / 1000.0
        folders.append((folder, seconds))
    return folders


def run_filter(
    *, sweep: str | None = None, fingerprint: str | None = None, status: str | None = None
) -> str:
    """MLflow's search filter string for the given criteria (all must hold)."""
    clauses = []
    for key, value in (
        ("tags.`" + PARENT_TAG + "`", sweep),
        (f"tags.{FINGERPRINT_TAG}", fingerprint),
    ):
        if value is not None:
            clauses.append(f"{key} = '{_literal(value)}'")
    if status is not None:
        if status.upper() not in STATUSES:
            raise ValueError(f"unknown run status {status!r}; expected one of {STATUSES}")
        clauses.append(f"attributes.status = '{status.upper()}'")
    return " AND ".join(clauses)


def _literal(value: str) -> str:
    """MLflow's filter grammar has no quote escaping: refuse what would break out of '...'."""
    if "'" in value or "\\" in value:
        raise ValueError(f"filter value may not contain quotes or backslashes: {value!r}")
    return value


def find_runs(
    uri: str,
    experiment: str = "summarization",
    *,
    sweep: str | None = None,
    fingerprint: str | None = None,
    status: str | None = None,
    page_size: int = PAGE_SIZE,
) -> list[RunRecord]:
    """All matching runs, newest first; [] when the experiment does not exist (or is deleted).

    Pages through the search (one call returns at most ``page_size`` runs), so nothing is
    silently cut off at MLflow's default ``max_results``.
    """
    client = MlflowClient(tracking_uri=uri)
    experiment_id = _experiment_id(client, experiment)
    if experiment_id is None:
        return []
    query = run_filter(sweep=sweep, fingerprint=fingerprint, status=status)
    # Keyed by id: page tokens are plain offsets, so a run started while we page shifts the
    # rest down by one and the next page would repeat a run.
    found: dict[str, RunRecord] = {}
    token: str | None = None
    while True:
        page = client.search_runs(
            [experiment_id], query, max_results=page_size, order_by=_NEWEST_FIRST, page_token=token
        )
        for run in page:
            found.setdefault(run.info.run_id, RunRecord.from_run(run))
        token = page.token
        if not token:
            return list(found.values())


def experiments(uri: str, *, count_up_to: int = PAGE_SIZE) -> dict[str, int]:
    """Name -> run count of every active experiment in the store, names sorted.

    For an error that names what is there when a name is wrong: "no runs" alone reads the
    same for a typo and for an experiment nothing was logged to yet. Each count reads one page
    of at most ``count_up_to`` runs, so a count equal to it means "at least that many".
    """
    client = MlflowClient(tracking_uri=uri)
    counts: dict[str, int] = {}
    for exp in client.search_experiments():
        page = client.search_runs([exp.experiment_id], max_results=count_up_to)
        counts[exp.name] = len(page)
    return dict(sorted(counts.items()))


def _experiment_id(client: MlflowClient, name: str) -> str | None:
    """The experiment's id; None when it does not exist or is deleted (its runs are too)."""
    exp = client.get_experiment_by_name(name)
    return None if exp is None or exp.lifecycle_stage == "deleted" else str(exp.experiment_id)


def finished_run(uri: str, experiment: str, fingerprint: str) -> str | None:
    """Id of the run that makes the cell ``fingerprint`` done anywhere in the experiment.

    None when there is none (the rule: ``runner.tracking.done``).
    """
    return newest_clean(finished_rows(uri, experiment, fingerprint=fingerprint)).get(fingerprint)


def finished_rows(
    uri: str, experiment: str, *, sweep: str | None = None, fingerprint: str | None = None
) -> list[Row]:
    """The FINISHED runs as rows of ``runner.tracking.done``'s rule, newest first."""
    runs = find_runs(uri, experiment, sweep=sweep, fingerprint=fingerprint, status="FINISHED")
    return [(r.fingerprint or "", r.run_id, r.tags.get(FAILED_DOCUMENTS_TAG, "")) for r in runs]


def experiment_id(uri: str, name: str) -> str | None:
    """The id of the active experiment named ``name``; None when there is none."""
    found = MlflowClient(tracking_uri=uri).get_experiment_by_name(name)
    return None if found is None or found.lifecycle_stage != "active" else found.experiment_id


def find_tagged(uri: str, tag: str, value: str, *, status: str = "FINISHED") -> list[RunRecord]:
    """The runs of every active experiment whose tag ``tag`` is ``value``, newest first.

    For a content identity (a human run's ``human.identity``): a run that holds the same
    thing is found wherever it was recorded.
    """
    client = MlflowClient(tracking_uri=uri)
    ids = [exp.experiment_id for exp in client.search_experiments()]
    if not ids:
        return []
    query = f"tags.`{_literal(tag)}` = '{_literal(value)}' AND " + run_filter(status=status)
    runs = client.search_runs(ids, query, max_results=PAGE_SIZE, order_by=_NEWEST_FIRST)
    return [RunRecord.from_run(run) for run in runs]


def runs_frame(uri: str, experiment: str = "summarization", **filters: Any) -> pandas.DataFrame:
    """One row per run, in ``find_runs`` order.

    Columns: ids, status, UTC times, then ``param.<name>`` and ``metric.<name>`` (metrics as
    floats, NaN where a run lacks one).
    """
    import pandas as pd

    rows = []
    for r in find_runs(uri, experiment, **filters):
        row: dict[str, Any] = {column: getattr(r, column) for column in RUN_COLUMNS}
        row["start_time"] = pd.to_datetime(r.start_time, unit="ms", utc=True)
        row["end_time"] = pd.to_datetime(r.end_time, unit="ms", utc=True)  # None -> NaT
        row.update({f"param.{k}": v for k, v in r.params.items()})
        row.update({f"metric.{k}": v for k, v in r.metrics.items()})
        rows.append(row)
    return _frame(rows, RUN_COLUMNS)


def scores_frame(
    uri: str, runs: list[RunRecord] | None = None, experiment: str = "summarization", **filters: Any
) -> pandas.DataFrame:
    """One row per (run, document) of each run's ``scores.json``.

    Columns: ids, ``param.<name>``, then each score key (``booookscore/score``,
    ``strategy/calls``, ...) as a float column.

    ``runs`` defaults to ``find_runs(uri, experiment, **filters)``. A run without
    ``scores.json`` (failed early, still running) contributes no rows.
    """
    if runs is None:
        runs = find_runs(uri, experiment, **filters)
    client = MlflowClient(tracking_uri=uri)
    rows = []
    for r in runs:
        run: dict[str, Any] = {c: getattr(r, c) for c in SCORE_COLUMNS if c != "doc_id"}
        run.update({f"param.{k}": v for k, v in r.params.items()})
        rows += [{**run, "doc_id": doc, **values} for doc, values in _scores(client, r).items()]
    return _frame(rows, SCORE_COLUMNS)


def _frame(rows: list[dict[str, Any]], fixed: list[str]) -> pandas.DataFrame:
    """``fixed`` columns, then ``param.*`` ones, then the rest as floats, each group sorted."""
    import pandas as pd

    seen = {k for row in rows for k in row if k not in fixed}
    params = sorted(k for k in seen if k.startswith("param."))
    numbers = sorted(seen - set(params))
    frame = pd.DataFrame(rows, columns=fixed + params + numbers)
    frame[numbers] = frame[numbers].astype(float)
    return frame


def _scores(client: MlflowClient, run: RunRecord) -> dict[str, dict[str, Any]]:
    """The run's ``scores.json`` ({} when it has none); JSON ``NaN`` reads back as nan."""
    with tempfile.TemporaryDirectory(prefix="scores-") as tmp:
        try:
            path = client.download_artifacts(run.run_id, "scores.json", dst_path=tmp)
        except (MlflowException, OSError):
            return {}
        scores = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(scores, dict):
        raise TypeError(f"run {run.run_id}: scores.json is not an object of documents")
    return scores


SAMPLES_FILE = "samples.json"
"""A run's judge samples (``judge.samples=K``, ``judges=``): ``{doc: {metric: [{"judge",
"sample", "values": {value: x}}, ...]}}``."""


def samples_of(
    uri: str, runs: list[RunRecord]
) -> dict[str, dict[str, dict[str, list[tuple[str, float]]]]]:
    """Run id -> doc -> ``<metric>/<value>`` -> (judge, value) of each sample (NaN undecided).

    Only the runs whose judge was sampled (param ``judge.samples`` above 1) are read.
    """
    sampled = [
        r
        for r in runs
        if r.params.get("judge.samples", "1") not in ("1", "None") or "judges" in r.params
    ]
    if not sampled:
        return {}
    client = MlflowClient(tracking_uri=uri)
    out: dict[str, dict[str, dict[str, list[tuple[str, float]]]]] = {}
    for run in sampled:
        with tempfile.TemporaryDirectory(prefix="samples-") as tmp:
            try:
                path = client.download_artifacts(run.run_id, SAMPLES_FILE, dst_path=tmp)
            except (MlflowException, OSError):
                continue
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        out[run.run_id] = {
            str(doc): {
                f"{metric}/{name}": [
                    (
                        str(s.get("judge", "")),
                        float("nan") if s["values"].get(name) is None else float(s["values"][name]),
                    )
                    for s in drawn
                ]
                for metric, drawn in metrics.items()
                for name in (drawn[0]["values"] if drawn else {})
            }
            for doc, metrics in data.items()
        }
    return out
