"""A sweep cell's config: the one its job will receive, composed by Hydra as the launcher does.

Hydra's ``ConfigLoader.load_sweep_config`` composes the sweep's config again with the cell's
overrides, as the basic sweeper's own validation and every launcher do, so the cell's config
(its fingerprint, its checks) cannot differ from the job's: one way to compose a cell, Hydra's.
"""

import contextlib
import copy
from collections.abc import Iterator

from hydra.core.hydra_config import HydraConfig
from hydra.types import HydraContext
from omegaconf import DictConfig, open_dict, read_write

from hydra_plugins.summarization_runner_sweeper.plan import Cell


def cell_config(
    context: HydraContext, sweep_config: DictConfig, cell: Cell, index: int
) -> DictConfig:
    """The config the job of ``cell`` (the sweep's ``index``-th) receives, without ``hydra``.

    Hydra's settings of the cell become ``HydraConfig``'s for the time being, so an
    interpolation of them (``${hydra:job.num}``) resolves as in the job; call it within
    ``hydra_config_kept``.
    """
    composed = context.config_loader.load_sweep_config(sweep_config, list(cell))
    with open_dict(composed):  # as the launcher numbers it, for ${hydra:job.num} and the like
        composed.hydra.job.id = index
        composed.hydra.job.num = index
    HydraConfig.instance().set_config(composed)
    task = copy.deepcopy(composed)  # what the job's function receives (hydra.core.utils.run_job)
    with read_write(task), open_dict(task):
        del task["hydra"]
    return task


@contextlib.contextmanager
def hydra_config_kept() -> Iterator[None]:
    """Within: cells may set ``HydraConfig``; after, the sweep's own is back."""
    original = HydraConfig.instance().cfg
    try:
        yield
    finally:
        HydraConfig.instance().cfg = original
