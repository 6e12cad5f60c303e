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
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse
from urllib.request import url2pathname

from metrics.booookscore_parse import LABELS
from runner.tracking import reader as results
from runner.tracking.reader import RunRecord
from runner.view.data import COLORS, Column, Marked, headline_columns, mark_summary, number, slug
from runner.view.trace import Fact, Section, trace_sections

ARTIFACT = "viewer.html"
ERROR_TAG = "viewer.error"
"""Tag set on the run, with the reason, when ``log_viewer`` could not make the page."""
_JSON_FILES = ("summaries.json", "scores.json", "annotations.json", "notes.json")
_TEMPLATES = Path(__file__).resolve().parent / "templates"
_LOG = logging.getLogger(__name__)
_PROGRESS = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


class Client(Protocol):
    """What the viewer uses of ``mlflow.tracking.MlflowClient`` (``Tracker.client``)."""

    def get_run(self, run_id: str) -> Any:
        """The run (info, params, metrics, tags)."""

    def list_artifacts(self, run_id: str, path: str | None = None) -> Any:
        """The artifacts at ``path`` (the root when None)."""

    def download_artifacts(self, run_id: str, path: str, dst_path: str | None = None) -> str:
        """A local copy of the artifact at ``path``."""

    def log_text(self, run_id: str, text: str, artifact_file: str) -> Any:
        """Write ``text`` as the artifact ``artifact_file``."""

    def set_tag(self, run_id: str, key: str, value: Any) -> Any:
        """Set one tag on the run."""


@dataclass(frozen=True)
class RunFiles:
    """The artifacts the page is made of; a missing one is empty (a failed run has few)."""

    summaries: dict[str, str] = field(default_factory=dict)
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    annotations: dict[str, Any] | None = None
    """None when the BooookScore metric did not run (nothing is marked then)."""
    notes: dict[str, list[str]] = field(default_factory=dict)
    traces: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def _quiet_downloads() -> Iterator[None]:
    """MLflow draws a progress bar on stderr per download: a dozen lines at the end of
    every run. Its switch is an environment variable read at each download.
    """
    before = os.environ.get(_PROGRESS)
    os.environ[_PROGRESS] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_PROGRESS, None)
        else:
            os.environ[_PROGRESS] = before


def read_files(client: Client, run_id: str, artifact_uri: str | None = None) -> RunFiles:
    """The run's JSON artifacts (a missing one stays empty).

    Artifacts on this machine (a ``file:`` artifact URI, the project's default) are read
    in place; MLflow's download copies each file through its repository, about 20 ms a
    file, which for 98 traces would be most of the page's cost. Remote stores are listed
    once and only the files present are downloaded.
    """
    if artifact_uri is None:
        artifact_uri = client.get_run(run_id).info.artifact_uri
    uri = urlparse(artifact_uri or "")
    if uri.scheme == "file" and Path(url2pathname(uri.path)).is_dir():
        return _parse(Path(url2pathname(uri.path)))
    present = {a.path for a in client.list_artifacts(run_id)}
    with tempfile.TemporaryDirectory(prefix="viewer-") as tmp, _quiet_downloads():
        for name in (*_JSON_FILES, "traces"):
            if name in present:
                client.download_artifacts(run_id, name, dst_path=tmp)
        return _parse(Path(tmp))


def _parse(root: Path) -> RunFiles:
    loaded = {
        n: json.loads((root / n).read_text("utf-8")) for n in _JSON_FILES if (root / n).is_file()
    }
    traces = {
        file.relative_to(root / "traces").as_posix()[: -len(".json")]: json.loads(
            file.read_text("utf-8")
        )
        for file in sorted((root / "traces").rglob("*.json"))
    }
    return RunFiles(
        summaries=loaded.get("summaries.json") or {},
        scores=loaded.get("scores.json") or {},
        annotations=loaded.get("annotations.json"),
        notes=loaded.get("notes.json") or {},
        traces=traces,
    )


@dataclass(frozen=True)
class Legend:
    """One error type: its colour, the run's rate (metric ``booookscore/type/<slug>``)
    and the flagged sentences carrying it across the run's documents.
    """

    label: str
    slug: str
    color: str
    rate: float | None
    count: int


@dataclass(frozen=True)
class DocView:
    """One document of the page."""

    index: int
    doc_id: str
    summary: str
    marked: Marked
    values: list[float | None]
    """The headline columns' values, in ``Page.columns`` order."""
    scores: list[tuple[str, float | None]]
    sections: list[Section]
    notes: list[str]


@dataclass(frozen=True)
class Page:
    """Everything the template shows."""

    run: RunRecord
    settings: list[Fact]
    totals: list[Fact]
    legend: list[Legend]
    columns: list[Column]
    docs: list[DocView]
    judged: bool
    """True when the run has annotations (the BooookScore metric ran)."""
    unparsed: int
    generated: str


def settings_line(params: dict[str, str]) -> list[Fact]:
    """Strategy, each role with its model and temperature, chunk, prompts, data, metrics."""
    facts = [Fact("strategy", params.get("strategy", "?"))]
    for role in [r for r in params.get("roles", "").split(",") if r and r != "none"]:
        parts = [params.get(role, "?"), params.get(f"{role}.model", "")]
        temperature = params.get(f"{role}.temperature")
        facts.append(
            Fact(
                role,
                " · ".join(p for p in parts if p)
                + (f" · T={temperature}" if temperature not in (None, "None") else ""),
            )
        )
    for key, title in (
        ("chunk", "chunk"),
        ("temperature", "temperature"),
        ("strategy.prompts", "prompts"),
        ("data", "data"),
        ("data.path", "data.path"),
        ("metrics", "metrics"),
    ):
        if params.get(key) not in (None, ""):
            facts.append(Fact(title, params[key]))
    return facts


def _totals(metrics: dict[str, float]) -> list[Fact]:
    cost = metrics.get("cost_usd")
    out = [Fact("cost", "—" if cost is None else f"${cost:,.4f}")]
    for key, title in (
        ("calls", "calls"),
        ("cache_hits", "cache hits"),
        ("documents", "documents"),
    ):
        if key in metrics:
            out.append(Fact(title, f"{metrics[key]:,.0f}"))
    if "wall_time_s" in metrics:
        out.append(Fact("wall time", f"{metrics['wall_time_s']:,.1f} s"))
    return out


def build_page(run: RunRecord, files: RunFiles) -> Page:
    """The page's values from the run record and its artifacts."""
    columns = headline_columns(files.scores)
    order = list(dict.fromkeys([*files.summaries, *files.scores, *files.traces]))
    docs = []
    for index, doc_id in enumerate(order):
        summary = files.summaries.get(doc_id, "")
        annotations = (
            (files.annotations or {}).get(doc_id) if files.annotations is not None else None
        )
        if files.annotations is not None and annotations is None:
            annotations = {}  # judged, nothing listed (the released format's null book)
        values = files.scores.get(doc_id, {})
        docs.append(
            DocView(
                index,
                doc_id,
                summary,
                mark_summary(summary, annotations),
                [number(values.get(c.key)) for c in columns],
                [(k, number(v)) for k, v in values.items()],
                trace_sections(files.traces.get(doc_id), summary),
                list(files.notes.get(doc_id, [])),
            )
        )
    legend = [
        Legend(
            label,
            slug(label),
            COLORS[label],
            number(run.metrics.get(f"booookscore/type/{slug(label)}")),
            sum(d.marked.counts.get(label, 0) for d in docs),
        )
        for label in LABELS
    ]
    return Page(
        run,
        settings_line(run.params),
        _totals(run.metrics),
        legend,
        columns,
        docs,
        files.annotations is not None,
        sum(d.marked.counts["unparsed"] for d in docs),
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )


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
    return str(_template().render(page=page, labels=LABELS, colors=COLORS))


def render_run(client: Client, run_id: str) -> str:
    """The page of a stored run (any status: a RUNNING or FAILED run shows what it has)."""
    from dataclasses import replace

    from runner.run.usage import read_usage

    stored = client.get_run(run_id)
    files = read_files(client, run_id, stored.info.artifact_uri)
    record = RunRecord.from_run(stored)
    with _quiet_downloads():
        usage = read_usage(client, run_id)  # bookkeeping counters (cache hits) left the metrics
    record = replace(record, metrics={**usage, **record.metrics})
    return render(build_page(record, files))


def log_viewer(client: Client, run_id: str) -> bool:
    """Log ``viewer.html`` to the run; call it before the run is marked FINISHED. True when
    the page was logged (the end-of-run summary then names its path).

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
        try:
            client.set_tag(run_id, ERROR_TAG, reason[:5000])
        except Exception:  # noqa: BLE001 - the store itself may be what failed
            pass
        return False
    _LOG.debug(
        "viewer.html logged for run %s in %.0f ms", run_id, 1000 * (time.perf_counter() - start)
    )
    return True


# ------------------------------------------------------------------------ command line

USAGE = (
    "usage: python -m runner.view RUN_ID|latest [out=FILE] [tracking.uri=URI] "
    "[tracking.experiment=NAME] [log=true]"
)


def _arguments(argv: list[str]) -> tuple[str, dict[str, str]]:
    run_id, options = "", {}
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            if run_id:
                raise ValueError(f"two run ids given ({run_id}, {item}); give one")
            run_id = item
        elif key in ("out", "tracking.uri", "tracking.experiment", "log"):
            options[key] = value
        else:
            raise ValueError(
                f"{key} is not an option; options: out, tracking.uri, tracking.experiment, log"
            )
    if not run_id:
        raise ValueError("give the run id (MLflow's Run ID, or 'latest')")
    return run_id, options


def main(argv: list[str] | None = None) -> int:
    """Write the page of one run to a file (and log it to the run with ``log=true``)."""
    from runner.config.run_config import default_tracking_uri

    try:
        run_id, options = _arguments(sys.argv[1:] if argv is None else argv)
    except ValueError as err:
        print(f"error: {err}\n{USAGE}", file=sys.stderr)
        return 2
    uri = options.get("tracking.uri") or default_tracking_uri()
    experiment = options.get("tracking.experiment") or "summarization"
    client = results.client(uri)  # the read side's client: mlflow stays behind its door
    if run_id == "latest":
        runs = results.find_runs(uri, experiment, status="FINISHED")
        if not runs:
            print(
                f"error: no FINISHED run in experiment {experiment!r} of {uri}; "
                "check tracking.uri and tracking.experiment",
                file=sys.stderr,
            )
            return 2
        run_id = runs[0].run_id
    try:
        html = render_run(client, run_id)
    except Exception as err:  # noqa: BLE001 - MLflow's errors, without importing MLflow
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(
            f"error: cannot read run {run_id} from {uri} ({first}); copy the Run ID from the "
            "MLflow UI and check tracking.uri",
            file=sys.stderr,
        )
        return 2
    out = Path(options.get("out") or ARTIFACT)
    out.write_text(html, encoding="utf-8")
    if options.get("log", "false").lower() in ("1", "true", "yes"):
        client.log_text(run_id, html, ARTIFACT)
    print(f"wrote {out} ({len(html.encode()) / 1024:,.0f} KB) for run {run_id}")
    return 0
