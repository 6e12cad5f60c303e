"""The checks that need neither litellm nor MLflow, run once per job before either loads.

A typo in a path, a missing key, a server that does not answer, a chunk beyond a known
context or an unreadable document should be answered in about a second, not after MLflow
and litellm (seconds each to import) have loaded, and must leave no MLflow run behind. What
is learned on the way (the documents, the prompt files, the window the chunk was checked against) is
handed on in ``Checked``, so ``runner/run/prepare.py`` neither reads nor checks it again: it
checks only what needs litellm or a model (a key only litellm can name, a window only
litellm knows, metric set-up).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlparse

from runner.api.chunking import split_into_chunks
from runner.api.errors import ConfigError, DataError
from runner.api.text import count_tokens
from runner.api.types import WorkItem
from runner.config.chunk_window import check_known_window
from runner.config.fingerprint import prompt_files
from runner.config.folders import suggested_store
from runner.config.run_config import RunConfig
from runner.data.sources import for_strategy, read_items
from runner.llm.endpoints import check_reachable, require_key
from runner.llm.spec import ModelSpec
from runner.tracking.store import database_store, networked_store, unusable_server


@dataclass(frozen=True)
class Checked:
    """What the preflight learned, for the job (``runner/run/prepare.py``) to use as it is."""

    items: list[WorkItem]
    """The documents (or summaries) to process, read once."""
    prompts: dict[str, Path]
    """Artifact path -> prompt file (``runner.config.fingerprint.prompt_files``)."""
    window: int | None
    """The summarizer's window ``chunk`` was checked against; None when only litellm knows
    it (or there is no summarizer), and the job checks it once the gateway has asked."""


def check(config: RunConfig) -> Checked:
    """Raise the first problem found, as a one-line ``RunnerError`` naming the fix.

    Returns what was read on the way, so the job does not read or check it again.
    """
    keys(config.roles)
    servers(config.roles)
    window = check_known_window(config)
    _tracking(config.tracking_uri)
    data = config.data
    items = read_items(data.source, data.values(), data.limit)
    items = for_strategy(items, data.source, config.strategy)
    if not items:
        raise DataError("no documents to summarize; choose data=sample or data=dir data.path=...")
    prompts_fit(config, items)
    return Checked(items, prompt_files(config), window)


def keys(roles: Mapping[str, ModelSpec]) -> None:
    """A role whose key variable is named but unset (servers given by api_base may need none).

    A key only litellm can name (no ``api_key_env``) is the gateway's ``check_ready``.
    """
    for role, spec in roles.items():
        if spec.api_key_env and not spec.api_base:
            require_key(role, spec, [] if os.environ.get(spec.api_key_env) else [spec.api_key_env])


def servers(roles: Mapping[str, ModelSpec]) -> None:
    """Each role's OpenAI-compatible server answers (checked once per server).

    A server shared by roles is named by the first of them (``model`` before ``judge``): with
    ``judge=same`` the key the user set is ``model.api_base``.
    """
    first: dict[str, tuple[str, ModelSpec]] = {}
    for role, spec in roles.items():
        if spec.api_base:
            first.setdefault(spec.api_base, (role, spec))
    for base, (role, spec) in first.items():
        check_reachable(role, spec, base)


def _tracking(uri: str) -> None:
    """A store the job cannot use, before any model call; other stores are left to MLflow.

    A tracking server that does not answer, a sqlite store on a network filesystem, or one
    whose folder cannot be created or written.
    """
    problem = unusable_server(uri) or networked_store(uri) or database_store(uri)
    if problem:
        raise ConfigError(problem)
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
            f"choose a writable folder, e.g. tracking.uri={suggested_store()}"
        ) from err


class _FirstCall(BaseException):
    """A stand-in model was asked for an answer: the strategy's own checks have passed.

    A ``BaseException``, so no ``except Exception`` in a strategy takes it for a failed call.
    """


@dataclass(frozen=True)
class _StandIn:
    """A role's model as a strategy sees it before its first call: name, window, tokens."""

    name: str
    context_window: int
    concurrency: int = 1

    def complete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _FirstCall

    def embed(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _FirstCall

    def count_tokens(self, text: str) -> int:
        return count_tokens(text)


def prompts_fit(config: RunConfig, items: list[WorkItem]) -> None:
    """Each document's chunks, inside the strategy's own prompts, fit its models' windows.

    ``chunk`` under the window is not enough: a strategy puts each chunk in a prompt, beside
    what it carries (incremental: the running summary and the answer's budget), and checks
    that before its first call. Here it runs on each document with stand-in models that
    know their window (when it is known without litellm) and stop it at its first call, so
    its ``ConfigError`` comes before any run exists instead of ending a run FAILED. The core
    names no strategy: the bound is the strategy's own. Any other error is left for the job,
    which meets it with the real models and names the plugin.
    """
    module = config.strategy_module
    stand_ins: dict[str, _StandIn] = {}
    for role in getattr(module, "ROLES", ()):
        spec = config.roles.get(role)
        window = spec.known_window if spec is not None else None
        if spec is None or not window:
            return  # a window only litellm knows: the strategy checks it in the run
        stand_ins[role] = _StandIn(spec.name, window)
    if not stand_ins:  # no model to overflow; and running it here would summarize twice
        return
    for item in items:
        if item.summary is not None or item.source is None:
            continue
        chunks = split_into_chunks(item.source.text, config.chunk)
        try:
            module.summarize(chunks, **stand_ins, **config.strategy_params)
        except _FirstCall:
            continue
        except ConfigError:
            raise
        except Exception:  # noqa: BLE001 - the job meets it again, where the plugin is named
            return
