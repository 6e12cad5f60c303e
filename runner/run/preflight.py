"""The checks that take milliseconds, run before anything heavy is imported.

A typo in a path, a missing key or an unreadable document should be answered in about a
second, not after MLflow (2 s) and litellm (5 s) have loaded, and must leave no MLflow run
behind. ``runner/run/prepare.py`` repeats the deep checks (servers answering, contexts, metric
set-up) once the gateways exist; what is checked here is only what needs neither.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from runner.config.fingerprint import prompt_files
from runner.config.run_config import RunConfig
from runner.data.sources import read_items
from runner.errors import ConfigError, DataError
from runner.llm.endpoints import check_reachable, require_key
from runner.types import WorkItem


def check(config: RunConfig) -> list[WorkItem]:
    """Raise the first problem found, as a one-line ``RunnerError`` naming the fix.

    Returns the documents read on the way, so the job does not read them again.
    """
    _keys(config)
    servers(config)
    _chunk(config)
    _tracking(config.tracking_uri)
    data = config.data
    items = read_items(data.source, data.values(), data.limit)
    if not items:
        raise DataError("no documents to summarize; choose data=sample or data=dir data.path=...")
    prompt_files(config)
    return items


def _keys(config: RunConfig) -> None:
    """A role whose key variable is named but unset (servers given by api_base may need none)."""
    for role, spec in config.roles.items():
        if spec.api_key_env and not spec.api_base:
            require_key(role, spec, [] if os.environ.get(spec.api_key_env) else [spec.api_key_env])


def _chunk(config: RunConfig) -> None:
    """``chunk`` beyond the summarizer's window, when the window is known without litellm."""
    spec = config.roles.get("model")
    if spec is None:
        return
    window = spec.context_window or (spec.n_ctx if spec.is_local else None)
    if window:
        check_chunk(config.chunk, window, spec.name)


def check_chunk(chunk: int, window: int, name: str) -> None:
    """``chunk`` must fit the summarizer's window.

    Checked here when the window is known without litellm, and in ``runner/run/prepare.py``
    once the gateway has asked litellm.
    """
    if chunk > window:
        raise ConfigError(
            f"chunk={chunk} exceeds the {window}-token context of '{name}'; lower chunk"
        )


def servers(config: RunConfig) -> None:
    """Each role's OpenAI-compatible server answers (checked once per server)."""
    for base, (role, spec) in {
        s.api_base: (r, s) for r, s in config.roles.items() if s.api_base
    }.items():
        check_reachable(role, spec, base)


def _tracking(uri: str) -> None:
    """A sqlite store whose folder cannot be created or written (others are left to MLflow)."""
    parsed = urlparse(uri)
    if parsed.scheme != "sqlite":
        return
    path = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None
    if path is None:
        return
    try:
        if path.exists():
            sqlite3.connect(f"file:{path}?mode=ro", uri=True).close()
            return
        existing = next(
            p for p in path.parents if p.exists()
        )  # the store is made when a run starts
        tempfile.TemporaryDirectory(
            dir=existing
        ).cleanup()  # can a folder be made there? (leaves none)
    except (OSError, sqlite3.Error) as err:
        raise ConfigError(
            f"tracking.uri={uri}: cannot use {path} ({getattr(err, 'strerror', None) or err}); "
            "choose a writable folder, e.g. tracking.uri=sqlite:///$PWD/mlruns/mlflow.db"
        ) from err
