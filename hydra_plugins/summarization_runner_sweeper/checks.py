"""Each cell of a sweep checked before any job starts: a ``CheckedCell`` or a ``BadCell``.

A cell is checked on the config its job will receive (``cell_config``): Hydra's composition,
``build_run_config`` and the preflight checks (keys, servers, documents), or, for
``estimate=true``, the estimate's own checks (the documents; no key or server needed). A
problem comes back as a value naming the cell, so the sweeper can refuse the whole sweep with
one line before anything is created. A checked cell carries its identity in the store (store,
experiment, fingerprint, computed as the job computes it), which says whether it is done.
"""

from dataclasses import dataclass
from functools import partial
from typing import Any

from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf, open_dict

from hydra_plugins.summarization_runner_sweeper.cell_config import cell_config
from hydra_plugins.summarization_runner_sweeper.plan import Cell


@dataclass(frozen=True)
class CellIdentity:
    """Where a cell's runs are and its fingerprint: what a FINISHED run must match to skip it."""

    uri: str
    experiment: str
    fingerprint: str


@dataclass(frozen=True)
class CheckedCell:
    """A cell whose config validated and whose checks passed."""

    cell: Cell
    config: Any
    """Its ``RunConfig``."""
    estimate: bool
    """``estimate=true``: the sweep prints estimates and runs nothing."""
    identity: CellIdentity | None
    """None with ``force=true``: the cell runs even when done."""


@dataclass(frozen=True)
class BadCell:
    """A cell that would fail before doing anything: its one-line problem."""

    cell: Cell
    problem: str


def check_cell(
    context: HydraContext, sweep_config: DictConfig, cell: Cell, index: int
) -> CheckedCell | BadCell:
    """The cell's config built and checked as its job would; its problem as a value.

    Sets ``HydraConfig`` to the cell's (``cell_config``): call it within
    ``cell_config.hydra_config_kept``.
    """
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from runner.api.errors import RunnerError
    from runner.config.hydra_errors import one_line
    from runner.config.panel import with_members

    try:
        task = cell_config(context, sweep_config, cell, index)
        raw = OmegaConf.to_container(task, resolve=True, throw_on_missing=True)
        assert isinstance(raw, dict)
        members = partial(_member_config, context, sweep_config)
        return _checked(cell, with_members({str(k): v for k, v in raw.items()}, cell, members))
    except (HydraException, OmegaConfBaseException) as err:
        return BadCell(cell, one_line(err))
    except RunnerError as err:
        return BadCell(cell, str(err))


def _member_config(
    context: HydraContext, sweep_config: DictConfig, overrides: list[str]
) -> dict[str, Any]:
    """The config a panel member's ``judge=<name>`` composes in this cell.

    As the job's ``with_members`` composes it: a cell of ``judges=[a,b],[b,c]`` once asked
    for ``judge:a=<alias>``, its members never composed.
    """
    composed = context.config_loader.load_sweep_config(sweep_config, list(overrides))
    with open_dict(composed):
        del composed["hydra"]
    out = OmegaConf.to_container(composed, resolve=True, throw_on_missing=True)
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}


def _checked(cell: Cell, raw: dict[str, Any]) -> CheckedCell:
    """The checks of one composed cell; a ``RunnerError`` names its problem."""
    from runner.config.fingerprint import fingerprint, prompt_files
    from runner.config.run_config import build_run_config
    from runner.run import preflight

    config = build_run_config(raw, cell)
    estimate = bool(raw.get("estimate"))
    if estimate:  # no key or server needed: the estimate's own checks
        from runner.estimate.command import documents

        documents(config)
    else:
        preflight.check(config)
    identity = (
        None
        if config.force
        else CellIdentity(
            config.tracking_uri, config.experiment, fingerprint(config, prompt_files(config))
        )
    )
    return CheckedCell(cell, config, estimate, identity)


def refusal(bad: list[BadCell], total: int, keys: tuple[str, ...]) -> str:
    """The one line that refuses a sweep with bad cells: the first one and how many more."""
    from runner.sweep.callback import job_run_name

    first = bad[0]
    name = job_run_name(first.cell, keys) or " ".join(first.cell)
    more = f" (and {len(bad) - 1} more of the {total} cells)" if len(bad) > 1 else ""
    return f"error: sweep cell {name}: {first.problem}{more}; nothing was run"
