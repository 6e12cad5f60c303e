"""Names and columns as MLflow's runs table wants them; no MLflow import.

MLflow's runs table shows no metric until the user picks one, and keeps that choice in the
browser only; a shared view (the experiment tag ``runner.ui.VIEW_TAG``) is the one state it
reads from the store. ``Tracker.show_columns`` writes it.
"""

from __future__ import annotations

import json
import re

KIND_TAG, RUNS_KIND = "mlflow.experimentKind", "custom_model_development"
"""The experiment's kind as MLflow records it: runs to compare ("Machine learning" in the UI's
kind selector), not a GenAI app whose traces come first. ``Tracker`` sets it on the experiments
it creates or opens, never replacing one already set. MLflow 3.17's UI does not read it to
choose the first screen (``runner/ui.py``), but it is what the store says about the experiment: the
UI of MLflow versions that read it, and any tool asking the REST API, open the runs by it."""
VIEW_KEY = "runner"
"""The runs-table view the runner keeps in each experiment (``?viewStateShareKey=runner``)."""
VIEW_TAG = "mlflow.sharedViewState." + VIEW_KEY
"""The experiment tag MLflow's UI reads a shared runs-table view from: JSON of its state."""

_BAD_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_name(name: str) -> str:
    """A name MLflow accepts (alphanumerics, _ - . / and spaces)."""
    return _BAD_NAME.sub("_", name)


def with_columns(view: str, metrics: list[str], params: list[str]) -> str | None:
    """The shared view ``view`` (its JSON) with these columns added; None when none is new.

    Columns other runs added stay (a sweep over metric groups shows every headline); an
    unreadable view is replaced.
    """
    try:
        state = json.loads(view)
    except ValueError:
        state = {}
    state = state if isinstance(state, dict) else {}
    shown = list(state.get("selectedColumns", []))
    wanted = [f"metrics.`{metric_name(m)}`" for m in metrics]
    wanted += [f"params.`{p}`" for p in params]
    columns = list(dict.fromkeys([*shown, *wanted]))
    if columns == shown:
        return None
    return json.dumps({**state, "selectedColumns": columns})
