"""Which checked cells of a sweep are done: the one rule a job also applies to itself.

A cell is done when the sweep's parent run has a FINISHED child with the cell's fingerprint
(``runner.tracking.sqlite_peek.done_cells``; a sqlite store is read with sqlite3, without
importing MLflow). Only the store is read, once per store and experiment.
"""

from dataclasses import dataclass, field

from hydra_plugins.summarization_runner_sweeper.checks import CheckedCell
from hydra_plugins.summarization_runner_sweeper.plan import Cell


@dataclass(frozen=True)
class Resumption:
    """The cells still to run, in order, and the done ones with the run that makes each done."""

    todo: list[Cell] = field(default_factory=list)
    done: dict[Cell, str] = field(default_factory=dict)


def resumption(checked: list[CheckedCell], parent_run_id: str) -> Resumption:
    """Split the cells into those to run and those done in the sweep ``parent_run_id``.

    Without a parent (a new sweep) or with ``force=true`` (no identity), a cell is to run.
    """
    from runner.tracking.sqlite_peek import done_cells

    found: dict[tuple[str, str], dict[str, str]] = {}  # (uri, experiment) -> done cells
    todo: list[Cell] = []
    done: dict[Cell, str] = {}
    for checked_cell in checked:
        identity = checked_cell.identity
        run_id = None
        if parent_run_id and identity is not None:
            where = (identity.uri, identity.experiment)
            if where not in found:
                found[where] = done_cells(identity.uri, identity.experiment, parent_run_id)
            run_id = found[where].get(identity.fingerprint)
        if run_id:
            done[checked_cell.cell] = run_id
        else:
            todo.append(checked_cell.cell)
    return Resumption(todo, done)


def skipped_line(name: str, run_id: str) -> str:
    """The line printed for a done cell."""
    return (
        f"skipped {name}: this sweep already has it FINISHED as MLflow run {run_id} "
        "(force=true runs it again)"
    )
