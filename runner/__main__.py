"""Entry point: ``python -m runner [overrides] [-m]``.

Thin on purpose: Hydra composes the config, we turn it into a validated ``RunConfig``,
run the job, and print a one-screen summary. A ``RunnerError`` ends the process with one
line naming the problem and the fix, and exit status 2.
"""

from __future__ import annotations

import logging
import os
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

from runner import cli_errors  # noqa: E402
from runner.errors import RunnerError  # noqa: E402

cli_errors.install()

log = logging.getLogger("runner")


def _overrides() -> tuple[str, ...]:
    try:
        return tuple(HydraConfig.get().overrides.task)
    except ValueError:  # not running under Hydra (tests calling main's body)
        return ()


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    """Compose, validate, run, report."""
    from runner.config import build_run_config
    from runner.experiment import run_experiment
    from runner.summary import format_summary

    try:
        raw = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        assert isinstance(raw, dict)
        config = build_run_config({str(k): v for k, v in raw.items()}, _overrides())
        result = run_experiment(config)
    except RunnerError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(format_summary(result))
    return None


if __name__ == "__main__":
    main()
