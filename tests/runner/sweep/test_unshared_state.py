"""What a sweep on a Ray cluster keeps in folders is said in one line at its start (issue 42).

The runs go to ``tracking.uri``, rate limits and the sweep's spending to Ray actors; the
response cache and its batch ledgers are folders, each machine's own unless mounted at the
same path on all of them (the end-to-end line: tests/runner/sweep/test_ray_launcher.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from runner.sweep.launcher import RAY_LAUNCHER, unshared_state


def _ray(address: str | None) -> Any:
    return OmegaConf.create({"_target_": RAY_LAUNCHER, "ray": {"init": {"address": address}}})


def _config(**keys: Any) -> Any:
    base = {"cache": {"dir": None}, "budget": {"sweep_usd": None}, "tracking": {"uri": None}}
    for dotted, value in keys.items():
        group, key = dotted.split("__")
        base[group][key] = value
    return OmegaConf.create(base)


def test_a_cluster_sweep_names_every_folder_it_keeps_state_in(tmp_path: Path) -> None:
    config = _config(cache__dir=str(tmp_path / "c"), budget__sweep_usd=5.0)
    note = unshared_state(_ray("10.0.0.1:6379"), config, str(tmp_path / "sweep"))
    assert note is not None and note.startswith("note: on a Ray cluster these are folders")
    assert f"cache.dir={tmp_path / 'c'} (response cache, batch ledgers)" in note
    assert "hydra.sweep.dir" not in note  # budget.sweep_usd's total is a Ray actor there
    assert "tracking.uri=sqlite:///" in note  # the default store is a file too
    assert "\n" not in note


def test_a_server_and_no_sweep_budget_leave_the_cache_alone(tmp_path: Path) -> None:
    config = _config(cache__dir=str(tmp_path / "c"), tracking__uri="http://head:5000")
    note = unshared_state(_ray("head:6379"), config, str(tmp_path / "sweep"))
    assert note is not None and "cache.dir=" in note
    assert "tracking.uri" not in note and "hydra.sweep.dir" not in note


def test_one_machine_says_nothing(tmp_path: Path) -> None:
    config = _config(budget__sweep_usd=5.0)
    assert unshared_state(_ray(None), config, str(tmp_path)) is None  # Ray inside the sweep
    joblib = OmegaConf.create({"_target_": "hydra_plugins.hydra_joblib_launcher.JoblibLauncher"})
    assert unshared_state(joblib, config, str(tmp_path)) is None
    assert unshared_state(None, config, str(tmp_path)) is None
