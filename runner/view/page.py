"""The summary viewer: one self-contained HTML page per run, ``viewer.html``.

Researchers read summaries, not ``annotations.json``; MLflow's UI previews an HTML
artifact in place (a sandboxed frame, scripts allowed), so the page goes where they look
first. It is one file with inline CSS and script and no network use; everything a person
needs (the summaries, the marks, the notes, the merge tree) is plain HTML that reads with
scripts off, and the script only adds sorting, filtering and selecting. Model text is
escaped by Jinja2's autoescape: a summary saying ``<script>`` is text.

Two doors: ``log_viewer(client, run_id)``, called by the runner at the end of a run (the
run is still RUNNING then; a failure to build the page never fails the run, see there),
and ``python -m runner.view RUN_ID [out=FILE] [tracking.uri=URI] [tracking.experiment=NAME]
[log=true]`` for any run already stored (``RUN_ID`` may be ``latest``: the newest FINISHED
run of the experiment). Like ``runner.tracking.reader`` it reads through MLflow's client with
explicit run ids; it takes that client from its caller (or, for the command, from
``runner.tracking.reader``) and imports no MLflow itself: ``runner.tracking.writer`` and
``runner.tracking.reader`` stay the only doors to MLflow (tests/test_structure.py).

This module renders and logs; what the page shows is ``runner.view.contents``, the run's
artifacts it is made of ``runner.view.artifacts``, the command line ``runner.view.cli``. The
names those modules took from here are imported back, so ``runner.view.page`` still offers
them (tests and benchmarks use ``build_page``, ``read_files``, ``RunFiles``, ``Page``...).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from pathlib import Path
from typing import Any

from runner.view import cli
from runner.view.artifacts import ARTIFACT, Client, RunFiles, quiet_downloads, read_files
from runner.view.contents import DocView, Legend, Page, build_page, settings_line
from runner.view.data import PALETTE, colors

__all__ = [
    "ARTIFACT",
    "PALETTE",
    "ERROR_TAG",
    "Client",
    "DocView",
    "Legend",
    "Page",
    "RunFiles",
    "build_page",
    "colors",
    "log_viewer",
    "main",
    "read_files",
    "render",
    "render_run",
    "settings_line",
]

ERROR_TAG = "viewer.error"
"""Tag set on the run, with the reason, when ``log_viewer`` could not make the page."""
_TEMPLATES = Path(__file__).resolve().parent / "templates"
_LOG = logging.getLogger(__name__)
_quiet_downloads = quiet_downloads  # the name benchmarks/bench_viewer.py uses


@functools.lru_cache(maxsize=1)
def _template() -> Any:
    """The Jinja2 template, compiled once per process (autoescape on for every value)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    return env.get_template("viewer.html.j2")


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.{digits}f}"


def render(page: Page) -> str:
    """The page as one HTML document."""
    return str(_template().render(page=page))


def render_run(client: Client, run_id: str) -> str:
    """The page of a stored run (any status: a RUNNING or FAILED run shows what it has)."""
    from dataclasses import replace

    from runner.tracking.reader import RunRecord
    from runner.tracking.usage import read_usage

    stored = client.get_run(run_id)
    files = read_files(client, run_id, stored.info.artifact_uri)
    record = RunRecord.from_run(stored)
    with quiet_downloads():
        usage = read_usage(client, run_id)  # bookkeeping counters (cache hits) left the metrics
    record = replace(record, metrics={**usage, **record.metrics})
    return render(build_page(record, files))


def log_viewer(client: Client, run_id: str) -> bool:
    """Log ``viewer.html`` to the run; call it before the run is marked FINISHED.

    True when the page was logged (the end-of-run summary then names its path).

    Never raises an ``Exception``: the page is a convenience, the run's results are not.
    When the page cannot be made or logged, the run gets no page, a warning is logged
    and the tag ``viewer.error`` holds the reason (``python -m runner.view RUN_ID`` can
    make the page later, once the cause is fixed). KeyboardInterrupt and the runner's
    SIGTERM still stop the job.
    """
    start = time.perf_counter()
    try:
        client.log_text(run_id, render_run(client, run_id), ARTIFACT)
    except Exception as err:  # noqa: BLE001 - a viewer bug must not fail the run
        reason = f"{type(err).__name__}: {err}"
        _LOG.warning("viewer.html not logged for run %s: %s", run_id, reason)
        with contextlib.suppress(Exception):  # the store itself may be what failed
            client.set_tag(run_id, ERROR_TAG, reason[:5000])
        return False
    _LOG.debug(
        "viewer.html logged for run %s in %.0f ms", run_id, 1000 * (time.perf_counter() - start)
    )
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m runner.view``: write the page of one run to a file (``runner.view.cli``)."""
    return cli.main(render_run, argv)
