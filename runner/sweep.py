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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

RUN_ID_ENV = "RUNNER_SWEEP_RUN_ID"
KEYS_ENV = "RUNNER_SWEEP_KEYS"
LEDGER_ENV = "RUNNER_SWEEP_LEDGER"
_SWEPT = re.compile(r"^[+~]*([\w.\-/@]+)=(.*)$")


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
    or listed in ``hydra.sweeper.params`` (experiment presets)."""
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
        for root in prompt_roots for p in sorted(root.rglob("*.txt"))
    }
    blob = json.dumps({"overrides": sorted(task_overrides), "config": core, "prompts": digests},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class SweepCallback(Callback):
    """Creates (or finds) the sweep's parent run and tells the jobs about it."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before any job: the parent run, RUNNING, and the environment for the jobs.

        Hydra turns a callback's exception into a warning and sweeps on; a sweep without its
        parent would scatter its runs, so a failure here ends the sweep with one line.
        """
        try:
            self._start(config)
        except Exception as err:
            print(f"error: could not create the sweep's MLflow parent run ({type(err).__name__}: {err}); "
                  "check tracking.uri", file=sys.stderr)
            raise SystemExit(2) from err

    def _start(self, config: DictConfig) -> None:
        from metrics import PROMPT_ROOT as METRIC_PROMPTS
        from runner.config import default_tracking_uri
        from runner.tracking import Tracker, artifact_root
        from strategies import PROMPT_ROOT as STRATEGY_PROMPTS

        task = list(config.hydra.overrides.task)
        raw_params = config.hydra.sweeper.get("params")
        params = OmegaConf.to_container(raw_params, resolve=False) if raw_params is not None else None
        keys = swept_keys(task, {str(k): v for k, v in params.items()} if isinstance(params, dict) else None)
        uri = config.tracking.uri or default_tracking_uri()
        tracker = Tracker(uri, str(config.tracking.experiment or "summarization"), artifact_root(uri))
        key = sweep_key(config, task, [STRATEGY_PROMPTS, METRIC_PROMPTS])
        name = next((t.split("=", 1)[1] for t in task if t.lstrip("+").startswith("experiment=")), "sweep")
        tracker.resume_or_start(
            {"runner.kind": "sweep", "runner.sweep_key": key},
            run_name=f"{name}: {' '.join(task) or '(defaults)'}"[:250],
            description=f"Sweep over {', '.join(keys) or 'nothing'}: python -m runner -m {' '.join(task)}",
        )
        tracker.log_params({"sweep.keys": ",".join(keys), "sweep.overrides": " ".join(task)})
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        os.environ[RUN_ID_ENV] = tracker.run_id
        os.environ[KEYS_ENV] = ",".join(keys)
        os.environ[LEDGER_ENV] = str(sweep_dir / "spend.json")
        print(f"sweep: MLflow parent run {tracker.run_id} ({len(keys)} swept keys: {', '.join(keys)})")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """After every job: the parent FINISHED; its children say how each job ended."""
        from runner.tracking import Tracker

        run_id = os.environ.pop(RUN_ID_ENV, None)
        os.environ.pop(KEYS_ENV, None)
        os.environ.pop(LEDGER_ENV, None)
        if run_id:
            Tracker.for_run(config.tracking.uri or _default_uri(), run_id).finish("FINISHED")


def _default_uri() -> str:
    from runner.config import default_tracking_uri

    return default_tracking_uri()
