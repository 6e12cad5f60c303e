"""-m sweeps as Slurm jobs (``hydra/launcher=submitit_slurm``, Hydra's submitit plugin from
the lock's ``slurm`` extra), tested for composition only: there is no Slurm here.

The sweep composes with the launcher's settings, the resuming sweeper makes the launcher and
checks every cell, and ``estimate=true`` prints the cells' estimate and submits nothing; the
sweep also says which of its state is in folders (tests/runner/sweep/test_unshared_state.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.conftest import missing
from tests.helpers.in_process import run_in_process
from tests.runner.test_app import overrides


def test_a_slurm_sweep_composes_checks_its_cells_and_submits_nothing(tmp_path: Path) -> None:
    if importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None:
        missing("hydra-submitit-launcher is not installed: pip install -e .[slurm]", "the lock")
    sweep = tmp_path / "sweep"
    done = run_in_process(
        "-m",
        "hydra/launcher=submitit_slurm",  # the worked config of docs/guides/across-machines.md
        "hydra.launcher.partition=cpu",
        "hydra.launcher.cpus_per_task=4",
        "hydra.launcher.mem_gb=8",
        "hydra.launcher.timeout_min=240",
        "hydra.launcher.array_parallelism=8",
        "strategy=hier,incremental",
        "data.limit=1",
        "estimate=true",
        f"hydra.sweep.dir={sweep}",
        *overrides("http://127.0.0.1:9/v1", {"cache.dir": str(tmp_path / "cache")}),
        f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "strategy=hier" in done.stdout and "strategy=incremental" in done.stdout, done.stdout
    (note,) = [line for line in done.stderr.splitlines() if line.startswith("note: on Slurm")]
    assert f"hydra.sweep.dir={sweep.resolve()} (rate limits)" in note
    assert f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'} (a file" in note
    assert not list(tmp_path.rglob(".submitit")) and not list(tmp_path.rglob("*.pkl"))
