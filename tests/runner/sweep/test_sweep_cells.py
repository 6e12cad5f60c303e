"""The resuming sweeper's cells and batches are Hydra's basic sweeper's, for every override kind.

The expectation is Hydra's own ``BasicSweeper.split_arguments`` (``hydra._internal``, read here
only), and for a few sweeps the cells written out by hand.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from hydra_plugins.summarization_runner_sweeper.plan import batch_size_problem, batches, plan_cells

REPO = Path(__file__).resolve().parents[3]

KINDS = {
    "plain": ["chunk=512", "seed=0"],
    "plain sweep": ["chunk=512,1024", "seed=0,1,2"],
    "add": ["+extra=1,2", "seed=0"],
    "force add": ["++model.temperature=0.1,0.2"],
    "delete": ["~judge", "chunk=512,1024"],
    "delete with value": ["~judge.temperature=0", "seed=0,1"],
    "choice": ["chunk=choice(512,1024)", "seed=choice(0,1)"],
    "range": ["seed=range(0,3)", "chunk=range(512,2049,512)"],
    "float range": ["model.temperature=range(0,1,0.5)"],
    "sort": ["seed=sort(2,0,1)", "chunk=sort(1024,512,reverse=true)"],
    "shuffle-free list values": ["data.ids=[a,b],[c]", "seed=0"],
    "quoted comma": ["data.name='a,b'", "seed=0,1"],
    "config group": ["strategy=hier,incremental", "model=claude"],
    "group with package": ["model@judge=claude,gpt4"],
    "group add": ["+experiment=local_demo,paper_table2"],
    "hydra setting": ["hydra.job.chdir=false", "seed=0,1"],
    "repeated key": ["seed=0,1", "chunk=512", "seed=5"],
    "nested values": ["metrics.booookscore.judge_temperature=0,0.3", "judge.temperature=0.2"],
    "interpolation": ["seed=0,1", "data.name=${strategy.name}"],
}


def _parsed(overrides: list[str]) -> list:  # type: ignore[type-arg]
    return OverridesParser.create().parse_overrides(overrides)


@pytest.mark.parametrize("overrides", list(KINDS.values()), ids=list(KINDS))
def test_the_cells_are_hydras_basic_sweep(overrides: list[str]) -> None:
    (hydras,) = BasicSweeper.split_arguments(_parsed(overrides), None)
    assert plan_cells(_parsed(overrides)) == [tuple(cell) for cell in hydras]


@pytest.mark.parametrize("size", [1, 2, 4, 5, 100])
def test_the_batches_are_hydras_basic_sweep(size: int) -> None:
    overrides = ["seed=range(0,5)", "chunk=512,1024"]
    hydras = BasicSweeper.split_arguments(_parsed(overrides), size)
    mine = batches(plan_cells(_parsed(overrides)), size)
    assert mine == [[tuple(cell) for cell in batch] for batch in hydras]


def test_the_cells_written_out() -> None:
    overrides = ["strategy=hier,incremental", "chunk=512", "seed=range(0,2)", "seed=7,8"]
    assert plan_cells(_parsed(overrides)) == [
        ("strategy=hier", "chunk=512", "seed=7"),
        ("strategy=hier", "chunk=512", "seed=8"),
        ("strategy=incremental", "chunk=512", "seed=7"),
        ("strategy=incremental", "chunk=512", "seed=8"),
    ]
    # Hydra spells a bare deletion with its null value, which deletes whatever is there
    assert plan_cells(_parsed(["+a=1", "~b", "++c.d=x"])) == [("+a=1", "~b=null", "++c.d=x")]
    assert plan_cells([]) == [()]


def test_no_cells_no_batches_and_no_size_is_one_batch() -> None:
    cells = [("seed=0",), ("seed=1",), ("seed=2",)]
    assert batches([], None) == []
    assert batches(cells, None) == [cells]
    assert batches(cells, 2) == [cells[:2], cells[2:]]


def test_a_glob_sweep_lists_the_config_groups_options(tmp_path: Path) -> None:
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    conf = Path(__file__).resolve().parents[3] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        parser = OverridesParser.create(config_loader=loader)
        overrides = parser.parse_overrides(["strategy=glob(hi*)", "seed=0,1"])
        (hydras,) = BasicSweeper.split_arguments(overrides, None)
        mine = plan_cells(overrides)
    assert mine == [tuple(cell) for cell in hydras]
    assert ("strategy=hier", "seed=1") in mine


def test_an_interval_sweep_is_hydras_error() -> None:
    with pytest.raises(HydraException, match="does not support sweep type : INTERVAL"):
        plan_cells(_parsed(["model.temperature=interval(0,1)"]))


def test_a_batch_size_that_launches_nothing_is_one_line_and_nothing_is_made(
    tmp_path: Path,
) -> None:
    """Hydra's basic sweeper failed an assertion (a traceback, exit 1) after its checks."""
    store = tmp_path / "mlflow.db"
    for size in ("0", "-1"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "runner",
                "-m",
                "seed=0,1",
                "strategy=none",
                "metrics=none",
                f"hydra.sweeper.max_batch_size={size}",
                f"tracking.uri=sqlite:///{store}",
                f"hydra.sweep.dir={tmp_path / 'sweep'}",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 2, done.stderr[-2000:]
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert lines == [
            f"error: hydra.sweeper.max_batch_size={size} would launch no job; give a positive "
            "number of jobs per launch, or null to launch them all at once"
        ]
        assert not store.exists() and not (tmp_path / "sweep").exists()
    assert batch_size_problem(None) is None and batch_size_problem(1) is None
