"""What a ``claims`` task shows of a summary: its claims and its source, from the judged run.

The claims come from the run's ``claims.json`` artifact (``{doc_id: [{"index", "claim", ...}]}``,
written by a metric that judges claims), so people label the very claims the judge labelled;
a run without it falls back on the claims its data gives (``WorkItem.extras["claims"]``),
taken only for a summary the data gives too (the same text), since a summary the run wrote
itself has no given claims. The source is read again from the run's data (its logged
``config.yaml``'s ``data`` block, through the data loader it names): runs log no source text.
A source that cannot be read (its file moved, a book not released) or is longer than
``SOURCE_LIMIT`` characters is shown as a one-line note instead, and evidence is then quoted
in the reason. A run with no claims at all is one line saying how to get them.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.annotate.sources import SourceError, System, read_json
from runner.human.attribute import normalize
from runner.tracking.store import quiet_downloads

CLAIMS_FILE = "claims.json"
"""The judged run's per-claim artifact (the shared contract of claim-judging metrics)."""
SOURCE_LIMIT = 100_000
"""Characters of source a task shows whole; a longer one (a book) is a note instead: evidence
spans over a whole book in one Label Studio page are neither readable nor fast."""


@dataclass(frozen=True)
class Claimed:
    """One summary to label: its claims and its source (or why the source is not shown)."""

    doc_id: str
    summary: str
    claims: tuple[str, ...]
    source: str
    """The source text, or a one-line note saying why it is not shown."""


@dataclass(frozen=True)
class RunData:
    """What the run's own data says of each document: its source, its given summary and claims."""

    sources: dict[str, str | None]
    given: dict[str, tuple[str | None, tuple[str, ...]]]
    """doc_id -> (the data's summary, the data's claims)."""
    problem: str = ""
    """Why the run's data could not be read ('' when it was)."""


def claimed(uri: str, system: System) -> tuple[list[Claimed], list[str]]:
    """The summaries of ``system`` (a run) with their claims and sources; notes on gaps."""
    artifacts = _artifacts(uri, system.name)
    run_claims = _run_claims(system.name, artifacts.get(CLAIMS_FILE))
    data = _run_data(artifacts.get("config.yaml"))
    notes = [f"run {system.name}: sources not shown ({data.problem})"] if data.problem else []
    out = []
    for doc, summary in sorted(system.summaries.items()):
        claims = run_claims.get(doc, ())
        if not claims:
            given_summary, given_claims = data.given.get(doc, (None, ()))
            same = given_summary is not None and normalize(given_summary) == normalize(summary)
            claims = given_claims if same else ()
        if not claims:
            notes.append(f"left out {doc} of run {system.name}: no claims")
            continue
        out.append(Claimed(doc, summary, claims, _shown(data, doc)))
    if not out:
        raise SourceError(
            f"run {system.name} has no claims: no {CLAIMS_FILE} artifact and its data gives "
            "none for its summaries; score it with a metric that judges claims first "
            "(metrics=faithfulness metrics.faithfulness.method=claims)"
        )
    return out, notes


def _shown(data: RunData, doc: str) -> str:
    """The source as the task shows it: whole, or a note on why not."""
    text = data.sources.get(doc)
    if text is None:
        why = data.problem or "the run's data gives no source for it"
        return f"(The source is not available here: {why}. Quote your evidence in the reason.)"
    if len(text) > SOURCE_LIMIT:
        return (
            f"(The source, {len(text.split())} words, is too long to show here. Read it apart "
            "and quote your evidence in the reason.)"
        )
    return text


def _artifacts(uri: str, run_id: str) -> dict[str, Any]:
    """The run's ``claims.json`` and ``config.yaml`` (parsed) when it has them."""
    from runner.tracking.reader import client

    mlflow = client(uri)
    present = {a.path for a in mlflow.list_artifacts(run_id)}
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="annotate-") as tmp, quiet_downloads():
        if CLAIMS_FILE in present:
            file = Path(mlflow.download_artifacts(run_id, CLAIMS_FILE, tmp))
            found[CLAIMS_FILE] = read_json(file, f"run {run_id}'s claims")
        if "config.yaml" in present:
            file = Path(mlflow.download_artifacts(run_id, "config.yaml", tmp))
            found["config.yaml"] = yaml.safe_load(file.read_text(encoding="utf-8"))
    return found


def _run_claims(run_id: str, data: Any) -> dict[str, tuple[str, ...]]:
    """``claims.json`` as doc_id -> claim texts in index order; a bad file is one line."""
    if data is None:
        return {}
    try:
        return {
            str(doc): tuple(str(c["claim"]) for c in sorted(entries, key=lambda c: int(c["index"])))
            for doc, entries in data.items()
        }
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise SourceError(
            f"run {run_id}'s {CLAIMS_FILE} is not {{doc_id: [{{index, claim, ...}}]}} "
            f"({type(err).__name__}: {err}); check the metric that wrote it"
        ) from None


def _run_data(config: Any) -> RunData:
    """The run's documents read again through the data loader its config names."""
    from runner.config.data_config import data_config
    from runner.data.sources import read_items

    block = config.get("data") if isinstance(config, dict) else None
    if not isinstance(block, dict):
        return RunData({}, {}, "the run logged no config.yaml with a data block")
    try:
        data = data_config(dict(block))
        items = read_items(data.source, data.values(), data.limit)
    except Exception as err:  # noqa: BLE001 - any loader's failure: the source is then a note
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return RunData({}, {}, f"its data={block.get('source')} cannot be read here: {first}")
    sources = {i.doc_id: (i.source.text if i.source else None) for i in items}
    given = {i.doc_id: (i.summary, tuple(i.extras.get("claims") or ())) for i in items}
    return RunData(sources, given)
