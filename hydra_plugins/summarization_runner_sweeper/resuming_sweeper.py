"""``hydra/sweeper=resuming``: Hydra's basic sweep that launches only the cells still to run.

``ResumingSweeper.sweep`` reads in order:

1. plan: the cells, the cartesian product of the overrides (``hydra.sweeper.params`` first),
   as Hydra's basic sweeper makes it (``plan.py``);
2. validate: every cell composed by Hydra as its job will be (``cell_config.py``) and checked
   (``checks.py``: the config, the preflight checks, the fingerprint); one bad cell stops the
   sweep with one line before its parent run exists or any job starts;
3. skip the done cells, a ``skipped`` line each (``resume.py``: the one rule, which a job also
   applies to itself); ``estimate=true`` prints the estimate here and runs nothing;
4. open the sweep's parent run (``runner/sweep/parent.py``: created, or set RUNNING again)
   only when a cell is left, so a refused sweep leaves no parent and a rerun of a finished
   sweep writes nothing;
5. launch the cells left in batches of ``max_batch_size`` (``self.launcher.launch``);
6. sum up: each job returns a ``JobOutcome`` (``runner/sweep/outcome.py``), which every
   launcher brings back as ``JobReturn.return_value``; the parent's status and the exit
   status (1 when a job failed) come from them.

A signal at any step stops the whole sweep (``runner/sweep/stop.py``). It subclasses Hydra's
public ``Sweeper``, as Hydra's own sweeper plugins do; Hydra finds it by scanning
``hydra_plugins``, and the config below puts it in the ConfigStore as ``hydra/sweeper=resuming``.
"""

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.summarization_runner_sweeper.cell_config import hydra_config_kept
from hydra_plugins.summarization_runner_sweeper.checks import (
    BadCell,
    CheckedCell,
    check_cell,
    refusal,
)
from hydra_plugins.summarization_runner_sweeper.plan import (
    Cell,
    batch_size_problem,
    batches,
    plan_cells,
)
from hydra_plugins.summarization_runner_sweeper.resume import (
    Resumption,
    resumption,
    skipped_line,
)
from runner.sweep.callback import job_run_name, parent_of
from runner.sweep.launcher import refuse_bad_launcher, unshared_state
from runner.sweep.outcome import JobOutcome, failure_message, failures
from runner.sweep.parent import SweepParent
from runner.sweep.stop import stoppable


@dataclass
class ResumingSweeperConf:
    """``hydra/sweeper=resuming``: the basic sweeper's settings."""

    _target_: str = "hydra_plugins.summarization_runner_sweeper.resuming_sweeper.ResumingSweeper"
    max_batch_size: Optional[int] = None  # noqa: UP045  # OmegaConf 2.3 reads typing.Optional
    params: Optional[dict[str, str]] = None  # noqa: UP045  # (experiment presets set it)


ConfigStore.instance().store(
    group="hydra/sweeper",
    name="resuming",
    node=ResumingSweeperConf,
    provider="summarization_runner",
)

Returns = list[Sequence[JobReturn]]
"""What a sweep returns: each batch's job returns, as Hydra's basic sweeper returns them."""


class ResumingSweeper(Sweeper):
    """Hydra's basic sweep that launches only the cells not done in this sweep.

    It keeps the basic sweeper's cartesian product and batches, and ends the sweep's parent run
    with its jobs' outcomes.
    """

    def __init__(self, max_batch_size: int | None, params: dict[str, str] | None = None) -> None:
        """The basic sweeper's settings; Hydra calls ``setup`` next."""
        self.max_batch_size = max_batch_size
        self.params = params or {}
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None
        self._task_function: TaskFunction | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        """Keep Hydra's context and the sweep's config, and make the launcher (again later)."""
        self.hydra_context, self.config = hydra_context, config
        self._task_function = task_function
        self._make_launcher()  # a launcher Hydra cannot make stops the sweep before anything

    def sweep(self, arguments: list[str]) -> Returns:
        """Plan, validate, skip the done cells, open the parent, launch, sum up.

        Exit status 2 with one line for a bad cell or batch size (nothing created); 1 with the
        first failed job's message when a job failed (its ``JobOutcome``, whichever launcher
        ran it).
        """
        assert self.config is not None
        refuse_bad_launcher(self.config.hydra.launcher)
        problem = batch_size_problem(self.max_batch_size)
        if problem:
            print(problem, file=sys.stderr)
            raise SystemExit(2)
        note = unshared_state(self.config.hydra.launcher, self.config, self.config.hydra.sweep.dir)
        if note:
            print(note, file=sys.stderr)
        parent = parent_of(self.config)
        if parent.find():
            keys = ", ".join(parent.keys)
            print(
                f"sweep: MLflow parent run {parent.run_id} ({len(parent.keys)} swept keys: {keys})"
            )
        with parent.told_to_jobs(), stoppable(parent):
            try:
                cells = self._plan(arguments)
                checked = self._validate(cells, parent.keys)
                left = self._skip_done(checked, parent)
                if any(c.estimate for c in checked):  # print it, run nothing (no parent, no job)
                    self._print_estimate(checked, left, parent.keys)
                    self._save_sweep_config()
                    returns: Returns = []
                else:
                    self._open_parent(left.todo, len(cells), parent)
                    self._save_sweep_config()
                    returns = self._launch(left.todo)
            except Exception as err:
                parent.finish([JobOutcome("sweep", f"{type(err).__name__}: {err}")])
                raise
            failed = failures(r.return_value for batch in returns for r in batch)
            parent.finish(failed)
        if failed:
            print(failure_message(failed), file=sys.stderr)
            raise SystemExit(1)
        return returns

    def _plan(self, arguments: list[str]) -> list[Cell]:
        """Every cell: ``hydra.sweeper.params``, then the command line's overrides."""
        assert self.hydra_context is not None
        given = [f"{key}={value}" for key, value in self.params.items()] + list(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        return plan_cells(parser.parse_overrides(given))

    def _validate(self, cells: list[Cell], keys: tuple[str, ...]) -> list[CheckedCell]:
        """Every cell checked; exit status 2 with one line when any is bad."""
        assert self.hydra_context is not None and self.config is not None
        with hydra_config_kept():
            found = [
                check_cell(self.hydra_context, self.config, cell, index)
                for index, cell in enumerate(cells)
            ]
        bad = [f for f in found if isinstance(f, BadCell)]
        if bad:
            print(refusal(bad, len(cells), keys), file=sys.stderr)
            raise SystemExit(2)
        return [f for f in found if isinstance(f, CheckedCell)]

    def _skip_done(self, checked: list[CheckedCell], parent: SweepParent) -> Resumption:
        """The cells left to run; a ``skipped`` line for each done one."""
        left = resumption(checked, parent.run_id)
        for cell, run_id in left.done.items():
            print(skipped_line(job_run_name(cell, parent.keys) or ",".join(cell), run_id))
        return left

    def _print_estimate(
        self, checked: list[CheckedCell], left: Resumption, keys: tuple[str, ...]
    ) -> None:
        """``estimate=true``: each cell's calls, tokens, cost and wall time, and the total."""
        from runner.estimate.command import estimate_sweep

        assert self.config is not None
        named = [
            (
                job_run_name(c.cell, keys) or ",".join(c.cell),
                c.config if c.estimate else None,
                left.done.get(c.cell),
            )
            for c in checked
        ]
        jobs = self.config.hydra.launcher.get("n_jobs")
        estimate_sweep(named, jobs if isinstance(jobs, int) and jobs > 0 else 1)

    def _open_parent(self, todo: list[Cell], total: int, parent: SweepParent) -> None:
        """The parent run opened when a cell is left to run.

        With no cell left, a parent found unfinished (killed after its last cell finished,
        before it was ended) is opened too, so that it ends with the status its children earn.
        """
        if todo:
            print(f"sweep: MLflow parent run {parent.open()} ({len(todo)} of {total} cells to run)")
            for line in parent.link_lines():  # as other sweepers' sweeps print it (callback.py)
                print(line)
        elif parent.run_id and parent.status != "FINISHED":
            parent.open()

    def _launch(self, todo: list[Cell]) -> Returns:
        """The cells left, launched batch by batch (``max_batch_size`` cells at most)."""
        if not todo:
            return []
        launcher = self._make_launcher()
        returns: Returns = []
        job_index = 0
        for batch in batches(todo, self.max_batch_size):
            results = launcher.launch([list(cell) for cell in batch], initial_job_idx=job_index)
            for result in results:
                _ = result.return_value  # a job that raised raises here, as under Hydra's sweeper
            job_index += len(batch)
            returns.append(results)
        return returns

    def _save_sweep_config(self) -> None:
        """The sweep's config in its folder (``multirun.yaml``), as Hydra's sweepers keep it."""
        assert self.config is not None
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")

    def _make_launcher(self) -> Launcher:
        """The launcher, made now that the jobs' environment is complete.

        That environment is the parent run's id, the swept keys and the ledger. Hydra resolves
        a launcher's config when it makes the launcher, and conf/hydra/launcher/ray.yaml
        forwards that environment to Ray's workers from there.
        """
        assert self.hydra_context is not None and self.config is not None
        assert self._task_function is not None
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=self.hydra_context, task_function=self._task_function, config=self.config
        )
        return self.launcher
