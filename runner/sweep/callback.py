"""A ``-m`` sweep as one MLflow parent run with its jobs as children.

Hydra calls ``SweepCallback.on_multirun_start`` once, in the launching process, before any
job starts. It creates the experiment and the parent run (or finds the one an identical
earlier sweep made, so a killed sweep rerun with the same command completes the same
parent) and hands the jobs what they need through environment variables, which every
launcher here passes on: the basic launcher runs jobs in this process, the joblib
launcher's workers are spawned after this point and inherit the environment.

- ``RUNNER_SWEEP_RUN_ID``: the parent run's id (MLflow's nested-run stack does not cross
  processes, so each job sets ``mlflow.parentRunId`` itself);
- ``RUNNER_SWEEP_KEYS``: the keys the sweep varies, which name each job's run;
- ``RUNNER_SWEEP_LEDGER``: a file where jobs add up what they spend, for ``budget.sweep_usd``.

The sweep's identity (tag ``runner.sweep_key``) hashes its command-line overrides, the
composed config and every bundled prompt file: the same command on the same code finds
its parent again; a changed prompt or preset starts a new one.

Resuming is decided once, before any job starts: ``ResumingSweeper`` (Hydra's basic sweeper,
which the callback puts in its place) composes each cell, computes its fingerprint as the
job would (``runner/config/fingerprint.py``), reads the sweep's FINISHED fingerprints from the store
in one query, and launches only the cells still to run; it prints a ``skipped`` line for each
other. A finished cell thus costs a copy of the sweep's config with the cell's values set
(~1 ms; a Hydra composition, ~75 ms, when the cell picks a config group): no job, no MLflow
import, no model call. A sqlite store is read with sqlite3 (MLflow's import alone takes
~2 s), any other through MLflow. When every cell is done and the parent is FINISHED, nothing is written; a
parent that has a cell to run is set RUNNING again first. A job still checks for itself
(``runner/run/lifecycle.py``), for other sweepers and for a cell finished in the meantime.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.core.plugins import Plugins
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

Plugins.instance()  # Hydra's plugin scan runs each plugin's module again: subclass what it leaves
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

from runner.tracking.sqlite_peek import FAILED_DOCUMENTS_TAG, finished_cells, sweep_parent  # noqa: F401

FAILED_MARK = "runner: cell failed: "
"""Start of the return value of a sweep job whose run failed (``runner/__main__.py``)."""
FAILED_CELLS: list[str] = []
"""The errors of the last sweep's failed cells, whichever launcher ran them: the exit status."""
RUN_ID_ENV = "RUNNER_SWEEP_RUN_ID"
KEYS_ENV = "RUNNER_SWEEP_KEYS"
LEDGER_ENV = "RUNNER_SWEEP_LEDGER"
_SWEPT = re.compile(r"^[+~]*([\w.\-/@]+)=(.*)$")
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
RESUMING_SWEEPER = "hydra_plugins.runner_sweep.ResumingSweeper"
"""The name ``ResumingSweeper`` is registered under: Hydra instantiates sweepers only by a
registered name within its plugin namespace (``hydra_plugins.``)."""
_reopen_parent: Callable[[], str] | None = None
"""Set while the sweep's parent is not yet created (or, found again, not yet set RUNNING):
creates or reopens it and returns its id once every cell has validated and one needs
running. A sweep refused for a bad cell thus leaves no parent behind."""


@dataclass(frozen=True)
class Sweep:
    """What a job knows of the sweep it belongs to."""

    run_id: str
    """The parent run's id."""
    keys: tuple[str, ...]
    """The config keys the sweep varies."""
    ledger: str | None
    """File of the sweep's spending, shared by its jobs."""


def current_sweep() -> Sweep | None:
    """The sweep this process's jobs belong to, or None for a single run."""
    run_id = os.environ.get(RUN_ID_ENV)
    if not run_id:
        return None
    keys = tuple(k for k in os.environ.get(KEYS_ENV, "").split(",") if k)
    return Sweep(run_id, keys, os.environ.get(LEDGER_ENV) or None)


def swept_keys(task_overrides: list[str], sweeper_params: dict[str, Any] | None) -> tuple[str, ...]:
    """Keys with more than one value: ``a=1,2``, ``range(...)``, ``choice(...)``, ``glob(...)``,
    or listed in ``hydra.sweeper.params`` (experiment presets).
    """
    keys = [str(k) for k in (sweeper_params or {})]
    for item in task_overrides:
        found = _SWEPT.match(item)
        if found and _is_sweep(found.group(2)):
            keys.append(found.group(1))
    return tuple(dict.fromkeys(keys))


def _is_sweep(value: str) -> bool:
    if re.match(r"^\s*(range|choice|glob|interval)\(", value):
        return True
    depth, quote = 0, ""
    for char in value:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            return True
    return False


def job_run_name(overrides: tuple[str, ...], keys: tuple[str, ...]) -> str:
    """The values that tell a job apart within its sweep: ``strategy=hier,chunk=2048``.

    Paths are cut to their file name, so runs over different files stay distinguishable.
    """
    values = dict(item.lstrip("+~").split("=", 1) for item in overrides if "=" in item)
    parts = [f"{key.split('.')[-1]}={_short(values[key])}" for key in keys if key in values]
    return ",".join(parts)


def _short(value: str) -> str:
    return Path(value).name if "/" in value and " " not in value else value


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


class SweepCallback(Callback):
    """Creates (or finds) the sweep's parent run and tells the jobs about it."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before any job: the parent run, RUNNING (a FINISHED one found again stays as it is
        until a cell turns out to need running), and the environment for the jobs.

        Hydra turns a callback's exception into a warning and sweeps on; a sweep without its
        parent would scatter its runs, so a failure here ends the sweep with one line.
        """
        try:
            self._start(config)
        except Exception as err:
            print(
                f"error: could not create the sweep's MLflow parent run ({type(err).__name__}: {err}); "
                "check tracking.uri",
                file=sys.stderr,
            )
            raise SystemExit(2) from err

    def _start(self, config: DictConfig) -> None:
        global _reopen_parent
        from metrics import PROMPT_ROOT as METRIC_PROMPTS
        from runner.config.run_config import default_tracking_uri
        from strategies import PROMPT_ROOT as STRATEGY_PROMPTS

        task = list(config.hydra.overrides.task)
        raw_params = config.hydra.sweeper.get("params")
        params = (
            OmegaConf.to_container(raw_params, resolve=False) if raw_params is not None else None
        )
        keys = swept_keys(
            task, {str(k): v for k, v in params.items()} if isinstance(params, dict) else None
        )
        uri = config.tracking.uri or default_tracking_uri()
        experiment = str(config.tracking.experiment or "summarization")
        key = sweep_key(config, task, [STRATEGY_PROMPTS, METRIC_PROMPTS])
        name = next(
            (t.split("=", 1)[1] for t in task if t.lstrip("+").startswith("experiment=")), "sweep"
        )

        def resume_or_start() -> str:
            from runner.tracking.writer import Tracker, artifact_root

            tracker = Tracker(uri, experiment, artifact_root(uri))
            tracker.resume_or_start(
                {"runner.kind": "sweep", "runner.sweep_key": key},
                run_name=f"{name}: {' '.join(task) or '(defaults)'}"[:250],
                description=f"Sweep over {', '.join(keys) or 'nothing'}: python -m runner -m {' '.join(task)}",
            )
            tracker.log_params({"sweep.keys": ",".join(keys), "sweep.overrides": " ".join(task)})
            return tracker.run_id

        resuming = _use_resuming_sweeper(config)  # it validates and picks the cells, before any job
        found = sweep_parent(uri, experiment, key) if resuming else None
        if resuming:  # the parent is created (or set RUNNING) once every cell has validated
            run_id, _reopen_parent = (found[0] if found else ""), resume_or_start
        else:
            run_id, _reopen_parent = resume_or_start(), None
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        os.environ[RUN_ID_ENV] = run_id
        os.environ[KEYS_ENV] = ",".join(keys)
        os.environ[LEDGER_ENV] = str(sweep_dir / "spend.json")
        if run_id:
            print(f"sweep: MLflow parent run {run_id} ({len(keys)} swept keys: {', '.join(keys)})")

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        """In the job's process: run from the folder the sweep was launched in, as the basic
        and joblib launchers do. Ray's workers start in the folder of ``ray start``, where the
        default ``./mlruns`` and ``./.cache`` (and relative paths) would miss the sweep's store.
        A folder absent on the worker's machine is left alone (README "Launchers").
        """
        cwd = str(config.hydra.runtime.cwd)
        if not config.hydra.job.chdir and os.path.isdir(cwd) and os.getcwd() != cwd:
            os.chdir(cwd)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """After every job: the parent's status sums up its children's (FINISHED only when
        every cell has a FINISHED run; FAILED with the count otherwise). A parent found
        FINISHED whose cells were all done is left as it was.
        """
        global _reopen_parent

        run_id = os.environ.pop(RUN_ID_ENV, None)
        os.environ.pop(KEYS_ENV, None)
        os.environ.pop(LEDGER_ENV, None)
        untouched, _reopen_parent = _reopen_parent is not None, None
        if run_id and not untouched:
            from runner.sweep.status import finish_parent

            uri = config.tracking.uri or _default_uri()
            finish_parent(
                uri, run_id, FAILED_CELLS, str(config.tracking.experiment or "summarization")
            )


def _use_resuming_sweeper(config: DictConfig) -> bool:
    """Put ``ResumingSweeper`` in place of Hydra's basic sweeper (another sweeper, e.g. a
    plugin's, is kept: its jobs then skip finished cells themselves). True when it is in place.

    It is registered with Hydra's plugin registry here rather than shipped as a
    ``hydra_plugins`` package, which an installed wheel and an editable install would both
    have to carry.
    """
    Plugins.instance().class_name_to_class[RESUMING_SWEEPER] = ResumingSweeper
    target = config.hydra.sweeper.get("_target_")
    if target == BASIC_SWEEPER:
        with read_write(config.hydra.sweeper):
            config.hydra.sweeper._target_ = RESUMING_SWEEPER
        return True
    return bool(target == RESUMING_SWEEPER)


class ResumingSweeper(BasicSweeper):
    """Hydra's basic sweeper (cartesian product, batches) that launches only the cells with no
    FINISHED run of the same fingerprint in this sweep.
    """

    _base: tuple[DictConfig | None, dict[str, Any], set[str]] | None = None
    """``_sweep_base`` of this sweep's config, made for the first cell."""

    def sweep(self, arguments: list[str]) -> Any:
        """The basic sweep; then the failed cells, read from the jobs' return values, which
        every launcher brings back (a joblib or Ray worker's own memory does not come back).
        """
        returns = super().sweep(arguments)
        FAILED_CELLS[:] = [
            r.return_value[len(FAILED_MARK) :]
            for batch in returns or []
            for r in batch
            if isinstance(r.return_value, str) and r.return_value.startswith(FAILED_MARK)
        ]
        return returns

    def split_arguments(  # type: ignore[override]  # BasicSweeper.sweep calls self.split_arguments
        self, overrides: list[Override], max_batch_size: int | None
    ) -> list[list[list[str]]]:
        cells = [
            cell
            for batch in BasicSweeper.split_arguments(overrides, max_batch_size)
            for cell in batch
        ]
        todo = self._unfinished(cells, _sweep_keys())
        if todo and _reopen_parent is not None:
            os.environ[RUN_ID_ENV] = run_id = _reopen()
            print(f"sweep: MLflow parent run {run_id} ({len(todo)} of {len(cells)} cells to run)")
        if not todo:
            return []
        return [
            list(batch) for batch in BasicSweeper.split_overrides_to_chunks(todo, max_batch_size)
        ]

    def _unfinished(self, cells: list[list[str]], keys: tuple[str, ...]) -> list[list[str]]:
        """The cells to run; a line for each one skipped. Every cell is validated first (its
        config and the preflight checks: keys, servers, documents): one bad cell stops the
        sweep with one line before its parent run exists or any job starts.
        """
        parent = os.environ.get(RUN_ID_ENV, "")
        done: dict[
            tuple[str, str], dict[str, str]
        ] = {}  # (uri, experiment) -> fingerprint -> run id
        todo, bad = [], []
        original = HydraConfig.instance().cfg
        try:
            checked = [(cell, self._cell(cell, index)) for index, cell in enumerate(cells)]
        finally:
            HydraConfig.instance().cfg = original
        bad = [(cell, found) for cell, found in checked if isinstance(found, str)]
        if bad:
            _refuse(bad, len(cells), keys)
        for cell, found in checked:
            if parent and isinstance(found, tuple):
                uri, experiment, fingerprint = found
                if (uri, experiment) not in done:
                    done[uri, experiment] = finished_cells(uri, experiment, parent)
                run_id = done[uri, experiment].get(fingerprint)
                if run_id:
                    name = job_run_name(tuple(cell), keys) or ",".join(cell)
                    print(
                        f"skipped {name}: this sweep already has it FINISHED as MLflow run {run_id} "
                        "(force=true runs it again)"
                    )
                    continue
            todo.append(cell)
        return todo

    def _cell(self, cell: list[str], index: int) -> tuple[str, str, str] | str | None:
        """(store, experiment, fingerprint) of a cell, from the config its job will receive;
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
            preflight.check(config)
        except (HydraException, OmegaConfBaseException) as err:
            return one_line(err)
        except RunnerError as err:
            return str(err)
        if config.force:
            return None
        return config.tracking_uri, config.experiment, fingerprint(config, prompt_files(config))

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
        """The same config when the cell differs from the sweep's own composed config only by
        plain values (``chunk=512``, ``model.temperature=0.2``): those set on a copy of it, as
        Hydra sets them after composing (~1 ms). None when a difference is a config group, an
        addition or deletion, a Hydra setting, or touches a key the command line set too, or
        when the config reads Hydra's settings: then it is composed.
        """
        if self._base is None:
            self._base = _sweep_base(self.config)
        base, given, groups = self._base
        if base is None:
            return None
        changes = [
            o
            for o in OverridesParser.create().parse_overrides(list(cell))
            if o.is_sweep_override() or given.get(o.get_key_element(), _UNSET) != o.value()
        ]
        for change in changes:
            key = change.key_or_group
            if (
                change.is_sweep_override()
                or change.is_hydra_override()
                or change.package is not None
                or change.type is not OverrideType.CHANGE
                or key in groups
                or any(_nested(key, other) for other in given)
            ):
                return None
        task = copy.deepcopy(base)
        try:
            for change in changes:
                OmegaConf.update(task, change.key_or_group, change.value(), merge=True)
        except Exception:  # noqa: BLE001  # e.g. an unknown key: composing says so in Hydra's words
            return None
        return task


_UNSET = object()


def _nested(key: str, other: str) -> bool:
    other = other.lstrip("+~")
    return key == other or key.startswith(other + ".") or other.startswith(key + ".")


def _sweep_base(config: DictConfig | None) -> tuple[DictConfig | None, dict[str, Any], set[str]]:
    """The sweep's composed config without ``hydra`` (None when it interpolates Hydra's
    settings), the values its command line set (key -> value), and its config groups.
    """
    assert config is not None
    base = copy.deepcopy(config)
    with read_write(base), open_dict(base):
        del base["hydra"]
    given = {
        o.get_key_element(): o.value()
        for o in OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
        if not o.is_sweep_override()
    }
    groups = {str(k) for k in config.hydra.runtime.choices}
    return (None if "hydra" in OmegaConf.to_yaml(base) else base), given, groups


def _sweep_keys() -> tuple[str, ...]:
    return tuple(k for k in os.environ.get(KEYS_ENV, "").split(",") if k)


def _refuse(bad: list[tuple[list[str], str]], total: int, keys: tuple[str, ...]) -> None:
    """One line naming the first bad cell and its problem; exit 2 before anything is made."""
    cell, problem = bad[0]
    name = job_run_name(tuple(cell), keys) or " ".join(cell)
    more = f" (and {len(bad) - 1} more of the {total} cells)" if len(bad) > 1 else ""
    print(f"error: sweep cell {name}: {problem}{more}; nothing was run", file=sys.stderr)
    raise SystemExit(2)


def _reopen() -> str:
    global _reopen_parent
    assert _reopen_parent is not None
    reopen, _reopen_parent = _reopen_parent, None
    return reopen()


def _default_uri() -> str:
    from runner.config.run_config import default_tracking_uri

    return default_tracking_uri()
