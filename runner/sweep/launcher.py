"""Launcher settings that cannot work, each said in one line before a sweep creates anything.

``hydra.launcher.n_jobs=0`` reached joblib, which stopped the sweep with its traceback and a
FAILED parent run; ``hydra.launcher.n_jobs=2`` without ``hydra/launcher=joblib`` got Hydra's
"not a config key", which does not say that the key belongs to another launcher. Both now end
with ``error: ...`` and exit status 2, nothing recorded.
"""

from __future__ import annotations

import re
import sys
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

_OVERRIDE = re.compile(r"Could not override '(hydra\.launcher\.([\w-]+)[\w.-]*)'")
GROUP = "hydra/launcher"


def refuse_bad_launcher(launcher: Any) -> None:
    """Exit 2 with one line when the sweep's launcher settings would run no job."""
    n_jobs = launcher.get("n_jobs") if launcher is not None else None
    if isinstance(n_jobs, int) and not isinstance(n_jobs, bool) and n_jobs == 0:
        print(
            "error: hydra.launcher.n_jobs=0 runs no job; set how many jobs run at once "
            "(hydra.launcher.n_jobs=2), or -1 for one per CPU; nothing was run",
            file=sys.stderr,
        )
        raise SystemExit(2)


def quiet_ray_schema_warning() -> None:
    """No "validated against ConfigStore schema" warning for ``hydra/launcher=ray``.

    ``conf/hydra/launcher/ray.yaml`` takes the place of the Ray plugin's config of that name on
    purpose, and Hydra checks it against the plugin's schema as intended; Hydra warns of that
    four times per sweep (a deprecation only the plugin's own naming could end), a screenful
    above the sweep's first line.
    """
    warnings.filterwarnings(
        "ignore",
        message=r"\s*'hydra/launcher/ray' is validated against ConfigStore schema",
        category=UserWarning,
    )


RAY_LAUNCHER = "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher"
SLURM_LAUNCHER = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"


def unshared_state(launcher: Any, config: Any, sweep_dir: str) -> str | None:
    """One line on what a sweep whose jobs may run on several machines keeps in folders.

    Jobs on a Ray cluster (``hydra.launcher.ray.init.address`` set) or Slurm may run on
    several machines. The runs go to ``tracking.uri``, and on Ray the rate limits and the
    sweep's spending (``budget.sweep_usd``) to Ray actors, but the response cache and its
    batch ledgers (``cache.dir``) and on Slurm the rate limits and the sweep budget's ledger
    (``hydra.sweep.dir``) are files: each machine has its own unless the folder is mounted
    at the same path on all of them, which the sweep cannot see. A sqlite store is a file
    too. None on one machine.
    """
    where = _machines(launcher)
    if where is None:
        return None
    from runner.config.run_config import default_cache_dir
    from runner.tracking.store import default_tracking_uri

    cache = (config.get("cache") or {}).get("dir") or default_cache_dir()
    folders = [f"cache.dir={Path(cache).resolve()} (response cache, batch ledgers)"]
    kept = ["rate limits"] if where == "Slurm" else []
    if where == "Slurm" and (config.get("budget") or {}).get("sweep_usd") is not None:
        kept.append("budget.sweep_usd's ledger")  # on Ray: an actor (runner.llm.rate_ray)
    if kept:
        folders.append(f"hydra.sweep.dir={Path(sweep_dir).resolve()} ({', '.join(kept)})")
    uri = (config.get("tracking") or {}).get("uri") or default_tracking_uri()
    if not str(uri).startswith(("http://", "https://")):
        folders.append(f"tracking.uri={uri} (a file: give an mlflow server's http:// address)")
    return (
        f"note: on {where} these are folders, each machine's own unless mounted at the "
        f"same path on all of them: {'; '.join(folders)} (docs/guides/across-machines.md)"
    )


def _machines(launcher: Any) -> str | None:
    """Where the launcher may run jobs on several machines ('a Ray cluster', 'Slurm'), or None."""
    target = launcher.get("_target_") if launcher is not None else None
    if target == SLURM_LAUNCHER:
        return "Slurm"
    if target == RAY_LAUNCHER and ((launcher.get("ray") or {}).get("init") or {}).get("address"):
        return "a Ray cluster"  # with no address, a Ray inside the sweep's process
    return None


def launcher_key_hint(err: BaseException, store: Any) -> str | None:
    """The line for a ``hydra.launcher.<key>`` that the chosen launcher does not have.

    It names the launcher options that have the key; None for any other error, or a key no
    launcher has (Hydra's own line then says to check its spelling). ``store``: Hydra's
    ``ConfigStore``, where its plugins put their launchers' configs (only the entry point and
    the sweep callback import Hydra).
    """
    found = _OVERRIDE.search(str(err))
    if not found:
        return None
    key, name = found.groups()
    owners = [option for option, keys in launcher_keys(store).items() if name in keys]
    if not owners:
        return None
    choose = " or ".join(f"{GROUP}={o}" for o in owners)
    return (
        f"{key} is a setting of the {' or '.join(owners)} launcher, not of the one this "
        f"command uses; add {choose} to the command"
    )


def launcher_keys(store: Any) -> dict[str, set[str]]:
    """Each launcher option Hydra knows -> its top-level keys.

    The options are those Hydra's plugins put in its ConfigStore (basic, joblib) and the YAML
    files of ``conf/hydra/launcher/`` (ray).
    """
    found: dict[str, set[str]] = {}
    for entry in store.list(GROUP):
        if entry.endswith(".yaml"):
            node = store.load(f"{GROUP}/{entry}").node
            found[entry.removesuffix(".yaml")] = {str(k) for k in node}
    folder = resources.files("runner.conf").joinpath(GROUP)
    if folder.is_dir():
        for file in folder.iterdir():
            if file.name.endswith(".yaml"):
                loaded = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
                found[file.name.removesuffix(".yaml")] = {str(k) for k in loaded}
    return found
