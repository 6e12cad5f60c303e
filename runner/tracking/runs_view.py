"""Names, filters and columns as MLflow's runs table wants them; no MLflow import.

MLflow's runs table shows no metric until the user picks one, and keeps that choice in the
browser only; a shared view (an experiment tag ``mlflow.sharedViewState.<key>``, opened by
``?viewStateShareKey=<key>``) is the one state it reads from the store. ``Tracker.show_columns``
writes three kinds, all with the headline metrics as columns:

- ``runner``: every run of the experiment (``runner.ui.experiment_url``);
- ``run-<run id>``: that one run (``runner.ui.run_url``, the link a job prints);
- ``sweep-<parent run id>``: a sweep's FINISHED jobs, without their parent, the swept keys
  as the first columns (``runner.ui.sweep_url``); ``sweep-<parent run id>-all``: every job,
  KILLED and FAILED ones included (the second link a sweep prints).

What MLflow 3.17's UI does with a shared view (read in its JS bundle,
``mlflow/server/js/build``): it takes the columns (``selectedColumns``) and the search facets
(``searchFilter``, ``orderByKey``, ...) from the view, but it ignores the whole view when the
URL carries a facet of its own (``?searchFilter=...``). So a filtered table with columns needs
the filter inside the view: one view per run and per sweep. It also drops ``runsExpanded`` and
``runsPinned`` from a view, so a sweep's jobs cannot be shown unfolded under their parent; the
sweep's view selects the jobs alone and sorts them by name, so the UI does not fetch their
parent (``sweep_view``), and they are top-level rows. The column order and widths
(``columnOrder``, ``columnWidths``) are the view's too (``_dump``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from runner.tracking.tags import PARENT_TAG, SUPERSEDED_TAG

KIND_TAG, RUNS_KIND = "mlflow.experimentKind", "custom_model_development"
"""The experiment's kind as MLflow records it: runs to compare ("Machine learning" in the UI's
kind selector), not a GenAI app whose traces come first. ``Tracker`` sets it on the experiments
it creates or opens, never replacing one already set. MLflow 3.17's UI does not read it to
choose the first screen (``runner/ui.py``), but it is what the store says about the experiment: the
UI of MLflow versions that read it, and any tool asking the REST API, open the runs by it."""
VIEW_PREFIX = "mlflow.sharedViewState."
"""The experiment tags MLflow's UI reads shared runs-table views from: JSON of its state."""
VIEW_KEY = "runner"
"""The runs-table view of every run, kept in each experiment (``?viewStateShareKey=runner``)."""
VIEW_TAG = VIEW_PREFIX + VIEW_KEY
"""The experiment tag holding that view."""

RUN_NAME_COLUMN, CREATED_COLUMN, DURATION_COLUMN = (
    "attributes.`Run Name`",
    "runDateAndNestInfo",
    "duration",
)
"""The runs table's own columns, as its column state names them."""
METRIC_WIDTH, PARAM_WIDTH = 115, 100
"""Column widths in pixels (``_dump`` says why these)."""
BY_NAME = "tags.`mlflow.runName`"
"""The runs table's sort key for the run's name."""

_BAD_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_name(name: str) -> str:
    """A name MLflow accepts (alphanumerics, _ - . / and spaces)."""
    return _BAD_NAME.sub("_", name)


def shown_params(roles: Iterable[str], swept: Iterable[str] = ()) -> list[str]:
    """The settings shown beside the scores.

    The strategy, the model and judge a job has, the chunk size, then a sweep's swept keys
    (each job logs every swept key as a param).
    """
    have = set(roles)
    roles_shown = [role for role in ("model", "judge") if role in have]
    return list(dict.fromkeys(["strategy", *roles_shown, "chunk", *swept]))


def run_view_key(run_id: str) -> str:
    """The share key of one run's view (``run-<id>``)."""
    return f"run-{run_id}"


def sweep_view_key(parent_run_id: str) -> str:
    """The share key of a sweep's view (``sweep-<parent run id>``)."""
    return f"sweep-{parent_run_id}"


def run_filter(run_id: str) -> str:
    """MLflow's search filter selecting exactly that run."""
    return f"attributes.run_id = '{run_id}'"


def sweep_all_view_key(parent_run_id: str) -> str:
    """The share key of a sweep's view of every job, KILLED and FAILED ones included."""
    return f"sweep-{parent_run_id}-all"


def children_filter(parent_run_id: str, finished_only: bool = True) -> str:
    """MLflow's search filter selecting a sweep's jobs (their ``mlflow.parentRunId``), not it.

    ``finished_only``: the FINISHED ones not superseded by a newer job of their cell, the
    results; a stopped, failed or superseded job's row is in the view of every job
    (``sweep_all_view_key``).
    """
    jobs = f"tags.`{PARENT_TAG}` = '{parent_run_id}'"
    if not finished_only:
        return jobs
    return f"{jobs} AND attributes.status = 'FINISHED' AND tags.`{SUPERSEDED_TAG}` IS NULL"


def columns(metrics: list[str], params: list[str]) -> list[str]:
    """The runs table's column names for these metrics and params, in that order."""
    wanted = [f"metrics.`{metric_name(m)}`" for m in metrics]
    wanted += [f"params.`{p}`" for p in params]
    return list(dict.fromkeys(wanted))


def view_state(metrics: list[str], params: list[str], search_filter: str) -> str:
    """A new view (its JSON): these columns, and only the runs ``search_filter`` selects."""
    return _dump({"searchFilter": search_filter}, columns(metrics, params))


def sweep_view(
    parent_run_id: str,
    metrics: list[str],
    params: list[str],
    like: str = "",
    swept: list[str] | None = None,
    finished_only: bool = True,
) -> str:
    """A sweep's view (its JSON): its jobs by name; the swept keys, the columns of ``like``, these.

    The swept keys lead (they are what tells the rows apart), then the view ``like``'s columns
    (a view's JSON or ''; at the sweep's start no job has said its headline yet: the
    experiment's view stands in), then ``metrics`` and ``params``. ``finished_only``: the
    FINISHED jobs (``children_filter``). Sorted by name, not by start time: MLflow's UI
    fetches the parents of the runs it shows only when sorting by start time, and with the
    parent there it folds the jobs under it.
    """
    try:
        shown = json.loads(like).get("selectedColumns", []) if like else []
    except (ValueError, AttributeError):
        shown = []
    facets = {
        "searchFilter": children_filter(parent_run_id, finished_only),
        "orderByKey": BY_NAME,
        "orderByAsc": True,
    }
    return _dump(facets, [*columns([], swept or []), *shown, *columns(metrics, params)])


def with_columns(view: str, metrics: list[str], params: list[str]) -> str | None:
    """The shared view ``view`` (its JSON) with these columns added; None when none is new.

    Columns other runs added stay (a sweep over metric groups shows every headline), and so
    does the view's filter; an unreadable view is replaced.
    """
    try:
        state = json.loads(view)
    except ValueError:
        state = {}
    state = state if isinstance(state, dict) else {}
    shown = list(state.get("selectedColumns", []))
    merged = list(dict.fromkeys([*shown, *columns(metrics, params)]))
    if merged == shown:
        return None
    return _dump(state, merged)


def _dump(state: dict[str, Any], selected: list[str]) -> str:
    """The view's JSON: ``state`` with these columns, laid out to be read without a click.

    The run's name and start first (MLflow pins them), then the columns in the order given
    (the headline values lead), the duration last. The widths let the four headline columns
    of ``metrics=paper`` fit beside MLflow's assistant panel, which opens on a browser's first
    visit, in a 1400-pixel-wide window.
    """
    selected = list(dict.fromkeys(selected))
    widths = {RUN_NAME_COLUMN: 150, CREATED_COLUMN: 105}
    widths |= {c: METRIC_WIDTH if c.startswith("metrics.") else PARAM_WIDTH for c in selected}
    layout = {
        "selectedColumns": selected,
        "columnOrder": [RUN_NAME_COLUMN, CREATED_COLUMN, *selected, DURATION_COLUMN],
        "columnWidths": widths,
    }
    return json.dumps({**state, **layout})
