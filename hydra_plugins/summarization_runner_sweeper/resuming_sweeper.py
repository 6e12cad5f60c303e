"""``hydra/sweeper=resuming``: Hydra's basic sweep that launches only the cells still to run.

Resuming is decided once, before any job starts: the sweeper composes each cell, computes its
fingerprint as the job would (``runner/config/fingerprint.py``), asks the store which cells of
the sweep are done (``runner.tracking.sqlite_peek.done_cells``: the one rule, which a job also
applies to itself) and launches only the others; it prints a ``skipped`` line for each done
one. A done cell thus costs a copy of the sweep's config with the cell's values set (~1 ms; a
Hydra composition, ~75 ms, when the cell picks a config group): no job, no MLflow import, no
model call. A sqlite store is read with sqlite3 (MLflow's import alone takes ~2 s), any other
through MLflow.

The sweeper owns the sweep's parent run (``runner/sweep/parent.py``): it opens it (creates
it, or sets it RUNNING again) only once every cell has validated and one needs running, so
a sweep refused for a bad cell leaves no parent behind and a rerun of a finished sweep writes
nothing. Each job returns a ``JobOutcome`` (``runner/sweep/outcome.py``), which every launcher
brings back as ``JobReturn.return_value``; the parent's status and the exit status come from
them.

It subclasses Hydra's ``BasicSweeper`` (``hydra._internal``, stable in the pinned hydra-core
1.3.8): its cartesian product, ``hydra.sweeper.params`` merging and batching are what a sweep
needs, and Hydra offers them nowhere public. Hydra finds this class by scanning
``hydra_plugins``; the config below puts it in the ConfigStore as ``hydra/sweeper=resuming``.
"""

import copy
import sys
from dataclasses import dataclass
from typing import Any, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.types import Override
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from hydra_plugins.summarization_runner_sweeper.cell_config import sweep_base, values_set
from runner.sweep.callback import job_run_name, parent_of
from runner.sweep.launcher import refuse_bad_launcher
from runner.sweep.outcome import JobOutcome, failure_message, failures
from runner.sweep.parent import SweepParent
from runner.sweep.stop import stoppable
from runner.tracking.sqlite_peek import done_cells


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


class ResumingSweeper(BasicSweeper):
    """Hydra's basic sweeper that launches only the cells not done in this sweep.

    It keeps the basic sweeper's cartesian product and batches, and ends the sweep's parent run
    with its jobs' outcomes.
    """

    def __init__(self, max_batch_size: int | None, params: dict[str, str] | None = None) -> None:
        """As ``BasicSweeper``; the parent run is found when the sweep starts."""
        super().__init__(max_batch_size=max_batch_size, params=params)
        self._parent: SweepParent | None = None
        self._task_function: TaskFunction | None = None
        self._base: tuple[DictConfig | None, dict[str, Any], set[str]] | None = None
        """``cell_config.sweep_base`` of this sweep's config, made for the first cell."""
        self._estimated: dict[tuple[str, ...], Any] = {}
        """``estimate=true``: cell -> its RunConfig (no job runs: the estimate is printed)."""
        self._done: dict[tuple[str, ...], str] = {}
        """Cell -> the FINISHED run of this sweep that makes it done."""

    def sweep(self, arguments: list[str]) -> Any:
        """The basic sweep, run within the sweep's parent run.

        Exit status 1 with the first failed job's message when a job failed (its
        ``JobOutcome``, whichever launcher ran it).
        """
        assert self.config is not None
        refuse_bad_launcher(self.config.hydra.launcher)
        self._parent = parent = parent_of(self.config)
        if parent.find():
            keys = ", ".join(parent.keys)
            print(
                f"sweep: MLflow parent run {parent.run_id} ({len(parent.keys)} swept keys: {keys})"
            )
        with parent.told_to_jobs(), stoppable(parent):
            try:
                returns = super().sweep(arguments)
            except Exception as err:
                parent.finish([JobOutcome("sweep", f"{type(err).__name__}: {err}")])
                raise
            failed = failures(r.return_value for batch in returns or [] for r in batch)
            parent.finish(failed)
        if failed:
            print(failure_message(failed), file=sys.stderr)
            raise SystemExit(1)
        return returns

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        """As ``BasicSweeper``, keeping the task function to set the launcher up again."""
        self._task_function = task_function
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def _setup_launcher(self) -> None:
        """The launcher, set up again now that the jobs' environment is complete.

        That environment is the parent run's id, the swept keys and the ledger. Hydra resolves
        a launcher's config when it makes the launcher, and conf/hydra/launcher/ray.yaml
        forwards that environment to Ray's workers from there.
        """
        assert self.hydra_context is not None and self.config is not None
        assert self._task_function is not None
        super().setup(
            hydra_context=self.hydra_context, task_function=self._task_function, config=self.config
        )

    def split_arguments(  # type: ignore[override]  # BasicSweeper.sweep calls self.split_arguments
        self, overrides: list[Override], max_batch_size: int | None
    ) -> list[list[list[str]]]:
        """The basic sweeper's batches, less the cells already done.

        The parent run opens when a cell is left to run.
        """
        assert self._parent is not None
        cells = [
            cell
            for batch in BasicSweeper.split_arguments(overrides, max_batch_size)
            for cell in batch
        ]
        todo = self._unfinished(cells, self._parent.keys)
        if self._estimated:  # estimate=true: print it, run nothing (no parent run, no job)
            self._print_estimate(cells)
            return []
        if not todo:
            if self._parent.run_id and self._parent.status != "FINISHED":
                # Killed after its last cell finished, before the parent was ended: end it now
                # with the status its children earn, or it stays RUNNING for good.
                self._parent.open()
            return []
        run_id = self._parent.open()
        print(f"sweep: MLflow parent run {run_id} ({len(todo)} of {len(cells)} cells to run)")
        self._setup_launcher()
        return [
            list(batch) for batch in BasicSweeper.split_overrides_to_chunks(todo, max_batch_size)
        ]

    def _unfinished(self, cells: list[list[str]], keys: tuple[str, ...]) -> list[list[str]]:
        """The cells to run; a line for each one skipped.

        Every cell is validated first (its config and the preflight checks: keys, servers,
        documents): one bad cell stops the sweep with one line before its parent run exists or
        any job starts.
        """
        assert self._parent is not None
        parent = self._parent.run_id
        done: dict[tuple[str, str], dict[str, str]] = {}  # (uri, experiment) -> done cells
        original = HydraConfig.instance().cfg
        try:
            checked = [(cell, self._cell(cell, index)) for index, cell in enumerate(cells)]
        finally:
            HydraConfig.instance().cfg = original
        bad = [(cell, found) for cell, found in checked if isinstance(found, str)]
        if bad:
            _refuse(bad, len(cells), keys)
        todo = []
        for cell, found in checked:
            if parent and isinstance(found, tuple):
                uri, experiment, fingerprint = found
                if (uri, experiment) not in done:
                    done[uri, experiment] = done_cells(uri, experiment, parent)
                run_id = done[uri, experiment].get(fingerprint)
                if run_id:
                    name = job_run_name(tuple(cell), keys) or ",".join(cell)
                    self._done[tuple(cell)] = run_id
                    print(
                        f"skipped {name}: this sweep already has it FINISHED as MLflow run "
                        f"{run_id} (force=true runs it again)"
                    )
                    continue
            todo.append(cell)
        return todo

    def _cell(self, cell: list[str], index: int) -> tuple[str, str, str] | str | None:
        """(store, experiment, fingerprint) of a cell, from the config its job will receive.

        None when it is not to be skipped (``force=true``); the one-line problem (a string)
        when it does not validate.
        """
        from hydra.errors import HydraException
        from omegaconf.errors import OmegaConfBaseException

        from runner.config.fingerprint import fingerprint, prompt_files
        from runner.config.hydra_errors import one_line
        from runner.config.run_config import build_run_config
        from runner.errors import RunnerError
        from runner.run import preflight

        try:
            task = self._values_set(cell)
            if task is None:
                task = self._composed(cell, index)
            raw = OmegaConf.to_container(task, resolve=True, throw_on_missing=True)
            assert isinstance(raw, dict)
            config = build_run_config({str(k): v for k, v in raw.items()}, tuple(cell))
            if raw.get("estimate"):  # no key or server needed: the estimate's own checks
                from runner.estimate.command import documents

                documents(config)
                self._estimated[tuple(cell)] = config
            else:
                preflight.check(config)
        except (HydraException, OmegaConfBaseException) as err:
            return one_line(err)
        except RunnerError as err:
            return str(err)
        if config.force:
            return None
        return config.tracking_uri, config.experiment, fingerprint(config, prompt_files(config))

    def _print_estimate(self, cells: list[list[str]]) -> None:
        """``estimate=true``: each cell's calls, tokens, cost and wall time, and the total."""
        from runner.estimate.command import estimate_sweep

        assert self._parent is not None and self.config is not None
        named = [
            (
                job_run_name(tuple(c), self._parent.keys) or ",".join(c),
                self._estimated.get(tuple(c)),
                self._done.get(tuple(c)),
            )
            for c in cells
        ]
        jobs = self.config.hydra.launcher.get("n_jobs")
        estimate_sweep(named, jobs if isinstance(jobs, int) and jobs > 0 else 1)

    def _composed(self, cell: list[str], index: int) -> DictConfig:
        """The config the cell's job receives, composed as the launcher does (~75 ms)."""
        assert self.hydra_context is not None and self.config is not None
        cell_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(cell))
        with open_dict(
            cell_config
        ):  # as the launcher numbers it, for ${hydra:job.num} and the like
            cell_config.hydra.job.id = index
            cell_config.hydra.job.num = index
        HydraConfig.instance().set_config(cell_config)
        task = copy.deepcopy(
            cell_config
        )  # what the job's function receives (hydra.core.utils.run_job)
        with read_write(task), open_dict(task):
            del task["hydra"]
        return task

    def _values_set(self, cell: list[str]) -> DictConfig | None:
        """The cell's config made from the sweep's own when only plain values differ (~1 ms)."""
        if self._base is None:
            self._base = sweep_base(self.config)
        return values_set(self._base, cell)


def _refuse(bad: list[tuple[list[str], str]], total: int, keys: tuple[str, ...]) -> None:
    """One line naming the first bad cell and its problem; exit 2 before anything is made."""
    cell, problem = bad[0]
    name = job_run_name(tuple(cell), keys) or " ".join(cell)
    more = f" (and {len(bad) - 1} more of the {total} cells)" if len(bad) > 1 else ""
    print(f"error: sweep cell {name}: {problem}{more}; nothing was run", file=sys.stderr)
    raise SystemExit(2)
