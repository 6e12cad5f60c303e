"""A ``-m`` sweep as one MLflow parent run with its jobs as children: the Hydra side.

The resuming sweeper (``hydra_plugins/summarization_runner_sweeper``, selected in
conf/config.yaml) owns the sweep's parent run (``runner/sweep/parent.py``): it finds an
earlier one, validates every cell, skips the done ones and opens the parent only when a cell
needs running; the jobs' outcomes (``runner/sweep/outcome.py``) come back to it as values.
``SweepCallback`` does the same for any other sweeper (``hydra/sweeper=basic``, a plugin's):
it opens the parent before any job, and its jobs skip done cells themselves
(``runner/run/lifecycle.py``). Either way, a job run by Ray starts in the sweep's folder.

The sweep's identity (tag ``runner.sweep_key``) hashes its command-line overrides, the
composed config and every bundled prompt file: the same command on the same code finds
its parent again; a changed prompt or preset starts a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from runner.config.overrides import choice, is_experiment_override, parse_all, swept
from runner.plugins.registry import available
from runner.sweep.launcher import refuse_bad_launcher
from runner.sweep.outcome import failure_message, failures
from runner.sweep.parent import SweepParent
from runner.sweep.stop import rearm, stoppable

RESUMING_SWEEPER = "hydra_plugins.summarization_runner_sweeper.resuming_sweeper.ResumingSweeper"
"""The ``_target_`` of ``hydra/sweeper=resuming``, the default (conf/config.yaml)."""


def swept_keys(task_overrides: list[str], sweeper_params: dict[str, Any] | None) -> tuple[str, ...]:
    """Keys with more than one value, on the command line or in ``hydra.sweeper.params``.

    On the command line: ``a=1,2``, ``range(...)``, ``choice(...)``, ``glob(...)``;
    ``hydra.sweeper.params`` is where experiment presets list them.
    """
    keys = [str(k) for k in (sweeper_params or {})]
    keys += [o.key for o in swept(task_overrides)]
    return tuple(dict.fromkeys(keys))


def job_run_name(overrides: tuple[str, ...], keys: tuple[str, ...]) -> str:
    """The values that tell a job apart within its sweep: ``strategy=hier,chunk=2048``.

    Paths are cut to their file name, so runs over different files stay distinguishable. A
    sweep of one cell sweeps no key: its name is then the cell's experiment overrides, never
    where results go (``tracking.uri=...``, ``cache.dir=...``).
    """
    given = [o for o in parse_all(overrides) if "=" in o.text]
    values = {o.key: o.value for o in given}
    parts = [f"{key.split('.')[-1]}={_short(values[key])}" for key in keys if key in values]
    if not parts:
        parts = [f"{o.key}={_short(o.value)}" for o in given if o.experiment]
    return ",".join(parts)


def _short(value: str) -> str:
    """A path as its file name, a float without its binary noise.

    ``range(0,1,0.1)`` sweeps 0.7 as ``0.7000000000000001``: a run's name is for reading, its
    params keep the value run.
    """
    if "/" in value and " " not in value:
        return Path(value).name
    if re.fullmatch(r"-?\d+\.\d{12,}", value):
        return f"{float(value):.12g}"
    return value


def sweep_key(config: DictConfig, task_overrides: list[str], prompt_roots: list[Path]) -> str:
    """Identity of a sweep: its overrides, its composed config and the bundled prompts."""
    core = OmegaConf.to_container(config, resolve=False)
    assert isinstance(core, dict)
    core.pop("hydra", None)
    digests = {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for root in prompt_roots
        for p in sorted(root.rglob("*.txt"))
    }
    blob = json.dumps(
        {"overrides": sorted(task_overrides), "config": core, "prompts": digests},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def bundled_prompt_roots() -> list[Path]:
    """The ``prompts/`` folder of each package that ships a built-in strategy or metric.

    Found from the registry's entry points and the packages' locations, none imported: the
    sweep names no plugin package, and its key stays what it was while those prompts do
    not change (a rerun finds its parent). A plugin from elsewhere is not part of the key;
    each cell's fingerprint holds its identity and prompts.
    """
    packages = {
        plugin.target.split(".")[0]
        for kind in ("strategy", "metrics")
        for plugin in available(kind).values()
        if plugin.built_in
    }
    roots = []
    for package in sorted(packages):
        spec = importlib.util.find_spec(package)  # a top-level package: found, not imported
        if spec is not None and spec.origin is not None:
            roots.append(Path(spec.origin).parent / "prompts")
    return roots


def resumes(config: DictConfig) -> bool:
    """True when the resuming sweeper runs this sweep (it then owns the parent run)."""
    return bool(config.hydra.sweeper.get("_target_") == RESUMING_SWEEPER)


def parent_of(config: DictConfig) -> SweepParent:
    """The parent run of the sweep ``config`` (Hydra's composed sweep config), not yet opened."""
    from runner.tracking.store import default_tracking_uri

    task = list(config.hydra.overrides.task)
    raw_params = config.hydra.sweeper.get("params")
    params = OmegaConf.to_container(raw_params, resolve=False) if raw_params is not None else None
    keys = swept_keys(
        task, {str(k): v for k, v in params.items()} if isinstance(params, dict) else None
    )
    name = choice(task, "experiment") or "sweep"
    experiment = " ".join(t for t in task if is_experiment_override(t))  # not progress=off...
    return SweepParent(
        uri=config.tracking.uri or default_tracking_uri(),
        experiment=str(config.tracking.experiment or "summarization"),
        key=sweep_key(config, task, bundled_prompt_roots()),
        run_name=f"{name}: {experiment or '(defaults)'}"[:250],
        description=(
            f"Sweep over {', '.join(keys) or 'nothing'}: python -m runner -m {' '.join(task)}"
        ),
        keys=keys,
        overrides=tuple(task),
        sweep_dir=Path(str(config.hydra.sweep.dir)).resolve(),
    )


class SweepCallback(Callback):
    """Opens the sweep's parent run for a sweeper other than the resuming one.

    It also starts a job in the folder the sweep was launched from.
    """

    def __init__(self) -> None:
        """No parent yet: ``on_multirun_start`` opens one unless the resuming sweeper will."""
        self._parent: SweepParent | None = None
        self._returns: list[object] = []
        self._told = contextlib.ExitStack()
        """The jobs' environment (``SweepParent.told_to_jobs``), closed after the last job."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before any job of another sweeper: the parent run, RUNNING, and the jobs' environment."""
        if resumes(config) or config.get("estimate"):  # an estimate leaves no run behind
            return
        refuse_bad_launcher(config.hydra.launcher)
        parent = parent_of(config)
        run_id = parent.open()
        self._parent, self._returns = parent, []
        self._told.enter_context(parent.told_to_jobs())
        self._told.enter_context(stoppable(parent))
        keys = parent.keys
        print(f"sweep: MLflow parent run {run_id} ({len(keys)} swept keys: {', '.join(keys)})")
        for line in parent.link_lines():
            print(line)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        """In the job's process: run from the folder the sweep was launched in.

        The basic and joblib launchers do so already. Ray's workers start in the folder of
        ``ray start``, where the default ``./mlruns`` and ``./.cache`` (and relative paths)
        would miss the sweep's store.
        A folder absent on the worker's machine is left alone (README "Launchers").
        """
        cwd = str(config.hydra.runtime.cwd)
        if not config.hydra.job.chdir and os.path.isdir(cwd) and os.getcwd() != cwd:
            os.chdir(cwd)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """Keep the job's outcome when it ran in this process (another sweeper's basic launcher).

        A worker's outcome stays in the worker, and its run's status speaks for it. A stop
        between two jobs of this process is the sweep's again (``stop.rearm``).
        """
        rearm()
        if self._parent is not None and job_return.status == JobStatus.COMPLETED:
            self._returns.append(job_return.return_value)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """After every job of another sweeper: the parent's status sums up its children's.

        Exit status 1 when a job seen failing here failed.
        """
        parent, self._parent = self._parent, None
        if parent is None:
            return
        self._told.close()
        failed = failures(self._returns)
        parent.finish(failed)
        if failed:
            print(failure_message(failed), file=sys.stderr)
            raise SystemExit(1)
