"""Each set-up check runs once per job: the preflight's findings are not checked again.

A server probe costs up to 10 s when the server is slow to answer, and a check made twice
can disagree with itself; ``runner/run/preflight.py`` checks what needs no litellm and hands
on what it learned, ``runner/run/prepare.py`` checks only what needs litellm.
"""

from __future__ import annotations

import itertools
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from runner.config import chunk_window
from runner.config.run_config import RunConfig, build_run_config
from runner.run import preflight
from runner.run import prepare as prepare_module
from runner.run.lifecycle import run_experiment
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.config.test_config import composed
from tests.runner.test_app import overrides
from tests.strategies.conftest import responder


class ProbeCountingServer(FakeOpenAIServer):
    """The loopback server, counting the readiness probes (``GET /models``) it answers."""

    def __init__(self, **kw: Any) -> None:
        self._probes = itertools.count()
        self.probes = 0
        super().__init__(**kw)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self
        base: Any = super()._handler_class()

        class Counting(base):  # type: ignore[misc]  # the base is built at run time
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                server.probes = next(server._probes) + 1
                super().do_GET()

        return Counting


def _config(server: ProbeCountingServer, stores: dict[str, str]) -> RunConfig:
    items = overrides(server.url, stores, "strategy=hier", "chunk=1024")
    return build_run_config(composed(*items), tuple(items))


def _count_chunk_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ``check_chunk`` call, through either module's name for it."""
    seen: list[int] = []
    real = chunk_window.check_chunk

    def spy(chunk: int, window: int, name: str) -> None:
        seen.append(window)
        real(chunk, window, name)

    monkeypatch.setattr(chunk_window, "check_chunk", spy)
    monkeypatch.setattr(prepare_module, "check_chunk", spy)
    return seen


def test_the_command_lines_job_probes_its_server_once(
    stores: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``python -m runner`` runs it: the preflight first, its findings handed on."""
    chunks = _count_chunk_checks(monkeypatch)
    with ProbeCountingServer(responder=responder()) as server:
        config = _config(server, stores)
        checked = preflight.check(config)
        result = run_experiment(config, checked)
    assert result.summaries and not result.failures
    assert (server.probes, chunks) == (1, [8192]), (
        "server probes, windows chunk was checked against"
    )


def test_a_job_run_without_a_preflight_still_checks_once(
    stores: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Called directly (tests, benchmarks), the job runs the preflight itself, once."""
    chunks = _count_chunk_checks(monkeypatch)
    with ProbeCountingServer(responder=responder()) as server:
        result = run_experiment(_config(server, stores))
    assert result.summaries and not result.failures
    assert (server.probes, chunks) == (1, [8192]), (
        "server probes, windows chunk was checked against"
    )
