"""A sweep's MLflow parent run, as an object: found, opened, finished, and told to the jobs.

The sweep's identity (tag ``runner.sweep_key``) is computed from its config by
``runner/sweep/callback.py``; this object holds it with the store's address and what it learns
on the way. The resuming sweeper (``hydra_plugins/summarization_runner_sweeper``) finds an
earlier parent first and opens it (creates it, or sets it RUNNING again) only once every cell
has validated and one needs running, so a sweep refused for a bad cell leaves no parent behind
and a rerun of a finished sweep writes nothing. The jobs learn about it from environment
variables, which every launcher here passes on (the basic launcher runs jobs in this process,
the joblib launcher's workers inherit the environment, conf/hydra/launcher/ray.yaml forwards
them to Ray's workers):

- ``RUNNER_SWEEP_RUN_ID``: the parent run's id (MLflow's nested-run stack does not cross
  processes, so each job sets ``mlflow.parentRunId`` itself);
- ``RUNNER_SWEEP_KEYS``: the keys the sweep varies, which name each job's run;
- ``RUNNER_SWEEP_LEDGER``: a file where jobs add up what they spend, for ``budget.sweep_usd``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runner.sweep.outcome import JobOutcome
from runner.tracking.runs_view import shown_params
from runner.tracking.sqlite_peek import sweep_parent
from runner.tracking.tags import RUN_KIND_TAG, SWEEP_KEY_TAG, SWEEP_KIND

RUN_ID_ENV = "RUNNER_SWEEP_RUN_ID"
KEYS_ENV = "RUNNER_SWEEP_KEYS"
LEDGER_ENV = "RUNNER_SWEEP_LEDGER"


@dataclass(frozen=True)
class Sweep:
    """What a job knows of the sweep it belongs to."""

    run_id: str
    """The parent run's id."""
    keys: tuple[str, ...]
    """The config keys the sweep varies."""
    ledger: str | None
    """File of the sweep's spending, shared by its jobs."""


def current_sweep() -> Sweep | None:
    """The sweep this process's jobs belong to, or None for a single run."""
    run_id = os.environ.get(RUN_ID_ENV)
    if not run_id:
        return None
    keys = tuple(k for k in os.environ.get(KEYS_ENV, "").split(",") if k)
    return Sweep(run_id, keys, os.environ.get(LEDGER_ENV) or None)


@dataclass
class SweepParent:
    """The parent run of one ``-m`` sweep and what this process knows of it."""

    uri: str
    """The tracking store."""
    experiment: str
    """The MLflow experiment."""
    key: str
    """The sweep's identity (tag ``runner.sweep_key``)."""
    run_name: str
    """The parent's name in the runs table."""
    description: str
    """The parent's one-line description (the command that reruns the sweep)."""
    keys: tuple[str, ...]
    """The config keys the sweep varies."""
    overrides: tuple[str, ...]
    """The sweep's command-line overrides."""
    sweep_dir: Path
    """Hydra's sweep folder (the spending ledger lives there)."""
    run_id: str = ""
    """The parent's id once found or opened; empty before."""
    status: str = ""
    """The found parent's status ('' before ``find`` or when there is none)."""
    opened: bool = field(default=False)
    """True once this process created the parent or set it RUNNING again: it then ends it."""
    experiment_id: str = ""
    """The experiment's id once the parent is opened (the sweep's link needs it)."""

    def find(self) -> str:
        """The id of an earlier parent of this sweep, whose done cells are skipped.

        Read from a sqlite store without MLflow; '' when there is none, or the store is not a
        sqlite file.
        """
        found = sweep_parent(self.uri, self.experiment, self.key)
        self.run_id, self.status = found if found else ("", "")
        return self.run_id

    def open(self) -> str:
        """Create the parent, or set the one found RUNNING again; tell the jobs its id.

        A sweep without its parent would scatter its runs, so a failure here ends the sweep
        with one line (exit status 2).
        """
        try:
            self.run_id = self._resume_or_start()
        except Exception as err:
            print(
                "error: could not create the sweep's MLflow parent run "
                f"({type(err).__name__}: {err}); check tracking.uri",
                file=sys.stderr,
            )
            raise SystemExit(2) from err
        self.opened = True
        os.environ[RUN_ID_ENV] = self.run_id
        return self.run_id

    def _resume_or_start(self) -> str:
        from runner.tracking.writer import Tracker, artifact_root

        tracker = Tracker(self.uri, self.experiment, artifact_root(self.uri))
        tracker.resume_or_start(
            {RUN_KIND_TAG: SWEEP_KIND, SWEEP_KEY_TAG: self.key},
            run_name=self.run_name,
            description=self.description,
        )
        tracker.log_params(
            {"sweep.keys": ",".join(self.keys), "sweep.overrides": " ".join(self.overrides)}
        )
        self.experiment_id = tracker.experiment_id
        try:  # a convenience, as a job's own view (runner.run.recording.show_in_runs_table)
            tracker.show_sweep(
                tracker.run_id, [], shown_params((), self.keys), start=True, swept=list(self.keys)
            )
        except Exception as err:  # noqa: BLE001 - the sweep can run without its view
            print(f"warning: could not set the sweep's runs-table view: {err}", file=sys.stderr)
        return tracker.run_id

    def link_lines(self) -> list[str]:
        """Where the sweep's jobs are, side by side with their scores; empty before ``open``."""
        if not (self.run_id and self.experiment_id):
            return []
        from runner.ui import sweep_lines

        return sweep_lines(self.uri, self.experiment_id, self.run_id)

    @contextlib.contextmanager
    def told_to_jobs(self) -> Iterator[None]:
        """The environment the jobs read (``current_sweep``) for the sweep's length."""
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        os.environ[RUN_ID_ENV] = self.run_id
        os.environ[KEYS_ENV] = ",".join(self.keys)
        os.environ[LEDGER_ENV] = str(self.sweep_dir / "spend.json")
        try:
            yield
        finally:
            for name in (RUN_ID_ENV, KEYS_ENV, LEDGER_ENV):
                os.environ.pop(name, None)

    def finish(self, failed: list[JobOutcome]) -> None:
        """End the parent with the status its children earn (``runner/sweep/status.py``).

        Only when this process opened it; a parent found FINISHED whose cells were all done
        stays as it was.
        """
        if not self.opened:
            return
        from runner.sweep.status import finish_parent

        finish_parent(self.uri, self.run_id, [f.describe() for f in failed], self.experiment)
