"""A sweep's cells and batches from its overrides, as Hydra's basic sweeper makes them.

Hydra offers its cartesian product only inside ``BasicSweeper`` (``hydra._internal``), so the
few lines are here, on Hydra's public ``Override``: each key keeps its place (a later override
of a key replaces the earlier one's values), a discrete sweep (``a=1,2``, ``range``,
``choice``, ``glob``) lists its values, and the cells are the product of the keys' values, the
first key varying slowest. Nothing here reads a config or the store.
"""

import itertools
from collections.abc import Sequence

from hydra.core.override_parser.types import Override
from hydra.errors import HydraException

Cell = tuple[str, ...]
"""One job's overrides: ``("strategy=hier", "chunk=1024")``."""


def plan_cells(overrides: Sequence[Override]) -> list[Cell]:
    """Every cell of the sweep, in the order the basic sweeper launches them.

    A sweep Hydra's basic sweeper cannot list (``interval(...)``) is Hydra's error.
    """
    values: dict[str, list[str]] = {}
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            values[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            kind = override.value_type.name if override.value_type else "unknown"
            raise HydraException(f"the resuming sweeper does not support sweep type : {kind}")
    return list(itertools.product(*values.values()))


def batch_size_problem(max_batch_size: int | None) -> str | None:
    """The one line refusing a ``hydra.sweeper.max_batch_size`` that is not a positive number."""
    if max_batch_size is None or max_batch_size > 0:
        return None
    return (
        f"error: hydra.sweeper.max_batch_size={max_batch_size} would launch no job; give a "
        "positive number of jobs per launch, or null to launch them all at once"
    )


def batches(cells: Sequence[Cell], max_batch_size: int | None) -> list[list[Cell]]:
    """The cells in launches of at most ``max_batch_size`` (None: one launch).

    ``max_batch_size`` is positive or None (``batch_size_problem``).
    """
    if not cells:
        return []
    size = max_batch_size or len(cells)
    return [list(cells[i : i + size]) for i in range(0, len(cells), size)]
