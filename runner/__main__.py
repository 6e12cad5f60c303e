"""Entry point: ``python -m runner [overrides] [-m]``, or the ``summarization-runner`` command.

Thin on purpose: Hydra composes the config, we turn it into a validated ``RunConfig``,
run the job, and print a one-screen summary. A ``RunnerError`` ends the process with one
line naming the problem and the fix, and exit status 2. Ctrl-C and SIGTERM end the run as
KILLED in MLflow and exit at once (130 and 143), without waiting for calls in flight.
Nothing heavy is imported before Hydra has decided that a job will run, so ``--help``
and ``--cfg job`` import neither litellm nor MLflow.

The configs are the package ``runner.conf`` (the repo's top-level ``conf/``, mapped in
pyproject.toml), so a clone and an installed wheel compose the same config from any
folder; ``--config-dir DIR`` adds a user's own folder of options.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

from runner import cli_errors
from runner.errors import RunnerError, Terminated
from runner.sweep import FAILED_CELLS, FAILED_MARK, current_sweep

cli_errors.install()
FAILED_JOBS: list[str] = []
"""Errors of sweep jobs run in this process: a failed cell does not stop the others; the exit
status says so. Jobs in joblib or Ray workers come back through ``runner.sweep.FAILED_CELLS``."""


def _overrides() -> tuple[str, ...]:
    try:
        return tuple(HydraConfig.get().overrides.task)
    except ValueError:  # not running under Hydra (tests calling main's body)
        return ()


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated(f"signal {signum}")


@hydra.main(config_path="pkg://runner.conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> str | None:
    """Compose, validate, run, report."""
    from runner import preflight
    from runner.config import build_run_config

    signal.signal(signal.SIGTERM, _terminate)
    # Ctrl-C and SIGTERM end the job KILLED; a parent that blocked or ignored them (Python's
    # multiprocessing resource tracker blocks both while it starts) must not make it unstoppable.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        raw = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        assert isinstance(raw, dict)
        config = build_run_config({str(k): v for k, v in raw.items()}, _overrides())
        items = preflight.check(config)  # before MLflow and litellm load: bad input answers in ~1 s
        from runner.experiment import run_experiment

        result = run_experiment(config, items)
    except RunnerError as err:
        if cfg.get("verbose"):
            traceback.print_exc()
        print(f"error: {err}", file=sys.stderr)
        if current_sweep() is None:
            sys.exit(2)
        FAILED_JOBS.append(str(err))
        return FAILED_MARK + str(err)  # a worker's FAILED_JOBS stays in the worker
    except (KeyboardInterrupt, Terminated) as err:
        print(f"stopped ({type(err).__name__}); the run is marked KILLED", file=sys.stderr)
        _kill_sweep(cfg)
        sys.stderr.flush()
        os._exit(143 if isinstance(err, Terminated) else 130)  # don't wait for calls in flight
    from runner.summary import format_summary

    print(format_summary(result))
    return None


def _kill_sweep(cfg: DictConfig) -> None:
    """An interrupted sweep ends KILLED too (its remaining cells never start)."""
    sweep = current_sweep()
    if sweep is not None:
        from runner.config import default_tracking_uri
        from runner.tracking import Tracker

        Tracker.for_run(cfg.tracking.uri or default_tracking_uri(), sweep.run_id).finish("KILLED")


def cli() -> None:
    """The ``summarization-runner`` command: exit status 1 when a sweep had failed jobs."""
    main()
    failed = max(FAILED_CELLS, FAILED_JOBS, key=len)
    if failed:
        print(f"{len(failed)} job(s) of the sweep failed; see their runs' failure tags", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    cli()
