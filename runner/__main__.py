"""Entry point: ``python -m runner [overrides] [-m]``, or the ``summarization-runner`` command.

Thin on purpose: Hydra composes the config, we turn it into a validated ``RunConfig``,
run the job, and print a one-screen summary. A ``RunnerError`` ends the process with one
line naming the problem and the fix, and exit status 2. Ctrl-C and SIGTERM end the run as
KILLED in MLflow and exit at once (130 and 143), without waiting for calls in flight, also
when the output goes through a pipe that the same Ctrl-C closed (``runner.streams``).
Nothing heavy is imported before Hydra has decided that a job will run, so ``--help``
and ``--cfg job`` import neither litellm nor MLflow.

The configs are the package ``runner.conf`` (the repo's top-level ``conf/``, mapped in
pyproject.toml), so a clone and an installed wheel compose the same config from any
folder; ``--config-dir DIR`` adds a user's own folder of options. The store is
``tracking.uri=URI`` as in every command; ``--tracking-uri URI`` becomes that override before
Hydra reads the command line.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from runner.api.errors import ConfigError, RunnerError, Terminated
from runner.config.folders import RUN_FOLDERS, refuse_unwritable, store_override
from runner.config.hydra_errors import RETIRED_OPTIONS, one_line, reported
from runner.streams import survive_closed_pipes
from runner.sweep.launcher import launcher_key_hint, quiet_ray_schema_warning
from runner.sweep.outcome import JobOutcome
from runner.sweep.parent import current_sweep
from runner.sweep.stop import in_sweeping_process, stop_sweep


def _overrides() -> tuple[str, ...]:
    try:
        return tuple(HydraConfig.get().overrides.task)
    except ValueError:  # not running under Hydra (tests calling main's body)
        return ()


def _multirun() -> bool:
    """Whether this job is a cell of a ``-m`` sweep.

    Hydra's mode says so, or, for a job in another process, the sweep's run id.
    """
    try:
        from hydra.types import RunMode

        return HydraConfig.get().mode == RunMode.MULTIRUN or current_sweep() is not None
    except ValueError:  # not running under Hydra
        return current_sweep() is not None


_stopping = False
"""Set by the first Ctrl-C or SIGTERM of a sweep's job."""


def _terminate(signum: int, frame: Any) -> None:
    _stop(Terminated(f"signal {signum}"))


def _interrupt(signum: int, frame: Any) -> None:
    _stop(KeyboardInterrupt())


def _stop(err: BaseException) -> None:
    """Raise ``err`` in the job; in a sweep's job, only once.

    A Ctrl-C reaches a joblib worker's job with the sweep's SIGTERM close behind
    (``runner/sweep/stop.py``): the second must not cut short the job's marking its run KILLED.
    """
    global _stopping
    if _stopping and current_sweep() is not None:
        return
    _stopping = True
    raise err


def _composed(overrides: list[str]) -> dict[str, Any]:
    """The config composed again with ``overrides`` (a panel member's ``judge=<name>``)."""
    from hydra import compose

    cfg = compose(config_name="config", overrides=overrides)
    out = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}


@hydra.main(config_path="pkg://runner.conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> JobOutcome:
    """Compose, validate, run, report.

    In a sweep a failed job does not stop the others: it returns its failure as a
    ``JobOutcome``, which the launcher hands back to the sweeper (the exit status comes from
    there); a single run exits 2 on a ``RunnerError``.
    """
    from runner.config.panel import with_members
    from runner.config.run_config import build_run_config
    from runner.run import preflight

    survive_closed_pipes()  # a job of a joblib or Ray worker writes to the sweep's pipe too
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _interrupt)
    # Ctrl-C and SIGTERM end the job KILLED; a parent that blocked or ignored them (Python's
    # multiprocessing resource tracker blocks both while it starts) must not make it unstoppable.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        raw = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        assert isinstance(raw, dict)
        raw = with_members({str(k): v for k, v in raw.items()}, _overrides(), _composed)
        config = build_run_config(raw, _overrides())
        if config.unasked and not _multirun():  # in a sweep the key may be for other cells
            raise ConfigError(config.unasked[0])
        if raw.get("estimate"):  # estimate=true: counts and prints; no run, no model call
            from runner.config.overrides import is_experiment_override
            from runner.estimate.command import estimate_job

            shown = [o for o in _overrides() if is_experiment_override(o)]  # not estimate=true
            estimate_job(config, " ".join(shown) or "(defaults)")
            return JobOutcome(_cell_name())
        checked = preflight.check(config)  # before MLflow and litellm: bad input answers in ~1 s
        from runner.run.lifecycle import run_experiment

        result = run_experiment(config, checked)
    except RunnerError as err:
        try:  # hydra.verbose=true asks for detail too (Hydra's own switch, as the issue spells it)
            hydra_verbose = bool(HydraConfig.get().verbose)
        except ValueError:  # not running under Hydra
            hydra_verbose = False
        if cfg.get("verbose") or hydra_verbose:
            traceback.print_exc()
        print(f"error: {err}", file=sys.stderr)
        if current_sweep() is None:
            sys.exit(2)
        return JobOutcome(_cell_name(), str(err))
    except (KeyboardInterrupt, Terminated) as err:
        _stopped(err)
    from runner.run.console import format_summary

    print(format_summary(result))
    return JobOutcome(_cell_name())


def _cell_name() -> str:
    """The job's overrides, as its failure names it: 'model.temperature=0.9 strategy=hier'."""
    return " ".join(_overrides()) or "(defaults)"


def _stopped(err: BaseException) -> NoReturn:
    """The job's run is KILLED (``run_experiment`` saw the signal); exit 130 or 143 at once.

    Calls in flight are not waited for. A single run says so; in a sweep the sweeping process
    alone says it, once, and ends the other jobs and the parent (``runner/sweep/stop.py``):
    here when the basic launcher ran the job in that process, else in the sweeping process.
    """
    signum = signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT
    if current_sweep() is None:
        print(f"stopped ({type(err).__name__}); the run is marked KILLED", file=sys.stderr)
    elif in_sweeping_process():
        stop_sweep(signum)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + signum)


def _one_line(err: BaseException) -> str:
    """A config error as one line; a launcher's key without its launcher names the launcher."""
    from hydra.core.config_store import ConfigStore

    return launcher_key_hint(err, ConfigStore.instance()) or one_line(err)


MULTIRUN_FLAGS = ("-m", "--multirun")


def flags_first(argv: list[str]) -> list[str]:
    """``argv`` with ``-m``/``--multirun`` moved before the overrides.

    Hydra's argparse takes the overrides as one positional list, so ``strategy=hier -m
    chunk=1024,2048`` stopped with ``unrecognized arguments``; researchers write ``-m`` at the
    end or in the middle as often as first. A flag given twice counts once.
    """
    flags = [a for a in argv if a in MULTIRUN_FLAGS]
    rest = [a for a in argv if a not in MULTIRUN_FLAGS]
    return flags[:1] + _config_dir_first(rest)


CONFIG_DIR_FLAGS = ("--config-dir", "-cd")


def _config_dir_first(argv: list[str]) -> list[str]:
    """``--config-dir DIR`` (``-cd DIR``, ``--config-dir=DIR``) moved before the overrides.

    After an override (``judge=mine --config-dir my_conf``) Hydra's argparse printed its
    eight-line usage and ``unrecognized arguments``, as with ``-m``.
    """
    moved: list[str] = []
    rest: list[str] = []
    words = iter(argv)
    for word in words:
        if word in CONFIG_DIR_FLAGS:
            moved += [word, *[w for w in [next(words, None)] if w is not None]]
        elif word.startswith("--config-dir="):
            moved.append(word)
        else:
            rest.append(word)
    return moved + rest


INTERNAL_GROUPS = ("model_strategy",)
"""Config groups composed for the user, never chosen by them (``conf/model_strategy/``: the
embedded model's per-strategy settings): ``--help`` does not list them among the choices."""


STORE_HELP = """== The store ==
tracking.uri=URI        the MLflow store runs are written to (default:
                        sqlite:///<this folder>/mlruns/mlflow.db); the same key in
                        python -m runner.report, runner.view and runner.annotate
                        (--tracking-uri URI means the same)
tracking.experiment=NAME  the MLflow experiment (default: summarization)
"""
"""What ``--help`` says of the store: one spelling for every command."""


def config_dir(argv: list[str]) -> Path | None:
    """The folder of ``--config-dir DIR`` (``-cd DIR``, ``--config-dir=DIR``), or None."""
    words = iter(argv)
    for word in words:
        if word in ("--config-dir", "-cd"):
            value = next(words, None)
            return Path(value).expanduser() if value else None
        if word.startswith("--config-dir="):
            return Path(word.partition("=")[2]).expanduser()
    return None


def _help_without_internal_groups(extra: Path | None = None) -> None:
    """``--help``: Hydra's page less the internal groups, then the store and the plugins.

    Hydra lists every group of the search path and offers no filter. The plugins include
    the loose modules of this folder; those of ``extra`` (the ``--config-dir``) are named as
    not found, since the runner does not look there.
    """
    import contextlib
    import io

    page = io.StringIO()
    try:
        with contextlib.redirect_stdout(page):
            main()
    finally:
        kept = [
            _without_retired(line)
            for line in page.getvalue().splitlines(keepends=True)
            if not line.startswith(tuple(f"{g}:" for g in INTERNAL_GROUPS))
        ]
        sys.stdout.write("".join(kept))
        from runner.plugins.listing import listing  # Hydra's page ends in SystemExit

        sys.stdout.write("\n" + STORE_HELP + "\n" + listing(Path.cwd(), extra))


def _without_retired(line: str) -> str:
    """A group's line of options, less the retired ones."""
    group, sep, options = line.partition(": ")
    if not sep or group not in RETIRED_OPTIONS:
        return line
    kept = [o for o in options.rstrip("\n").split(", ") if o not in RETIRED_OPTIONS[group]]
    return f"{group}: {', '.join(kept)}\n"


def cli() -> None:
    """The ``summarization-runner`` command: a config error is one line with exit status 2.

    A sweep with failed jobs exits 1 (its sweeper says so, from the jobs' outcomes).
    """
    survive_closed_pipes()  # '| tee log' and Ctrl-C: tee dies first; the runs still end KILLED
    sys.argv[1:] = store_override(flags_first(sys.argv[1:]))  # --tracking-uri X: tracking.uri=X
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        _help_without_internal_groups(config_dir(sys.argv[1:]))
        return
    refuse_unwritable(sys.argv[1:], RUN_FOLDERS)  # before Hydra makes outputs/ here
    quiet_ray_schema_warning()
    reported(main, _one_line)


if __name__ == "__main__":
    cli()
