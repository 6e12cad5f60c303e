"""Run one job: documents -> chunks -> strategy -> summary + trace -> metrics -> MLflow.

Everything that can be checked before work starts (config, API keys, chunk vs context)
is checked before the MLflow run exists; anything that fails later marks the run FAILED
with the reason, so a report never counts a half-finished job.
"""

from __future__ import annotations

import inspect
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from metrics import METRICS, NEEDS_JUDGE
from runner.call_log import CallLog, CallTotals
from runner.chunking import split_into_chunks
from runner.config import RunConfig
from runner.documents import load_documents
from runner.errors import ConfigError, DataError
from runner.llm import Gateway
from runner.llm_cache import ResponseCache
from runner.progress import Progress
from runner.run_logging import log_outcomes, log_setup
from runner.tracking import Tracker
from runner.types import Document, MetricResult, StrategyResult
from strategies import STRATEGIES, precomputed


@dataclass(frozen=True)
class DocumentOutcome:
    """Summary, trace and scores of one document."""

    doc_id: str
    """The document's id."""
    result: StrategyResult
    """The strategy's summary, trace and counters."""
    scores: dict[str, MetricResult]
    """Metric name -> its result."""


@dataclass(frozen=True)
class RunResult:
    """What a finished job reports back."""

    run_id: str
    """MLflow run id."""
    run_name: str
    """MLflow run name (from the overrides)."""
    summaries: dict[str, str]
    """doc_id -> summary."""
    system_metrics: dict[str, float]
    """Metric means over documents, plus totals."""
    totals: CallTotals
    """Model-call accounting."""
    tracking_uri: str
    """Where the run is stored."""


def run_name(overrides: tuple[str, ...]) -> str:
    """'strategy=hier,chunk=1024', or 'defaults' when nothing was overridden."""
    kept = [o for o in overrides if not o.startswith(("hydra.", "tracking.", "cache.", "progress"))]
    return ",".join(kept) or "defaults"


def _gateways(config: RunConfig, calls: CallLog) -> tuple[Gateway, Gateway | None]:
    cache = ResponseCache(config.cache_dir) if config.cache_dir else None
    model = Gateway(config.model, calls, cache, config.seed, config.temperature, role="model")
    if config.strategy == "precomputed":  # no summarizer calls; check the file up front
        precomputed.load_summaries(str(config.strategy_params.get("summaries") or ""))
    else:
        model.check_ready()
    if config.chunk > model.context_window:
        raise ConfigError(
            f"chunk={config.chunk} exceeds the {model.context_window}-token context of "
            f"'{config.model.name}'; lower chunk"
        )
    judge = None
    if NEEDS_JUDGE & set(config.metrics):
        judge = Gateway(config.judge, calls, cache, config.seed, None, role="judge")
        judge.check_ready()
    return model, judge


def _process(
    doc_id: str, doc: Document | None, config: RunConfig, model: Gateway, judge: Gateway | None
) -> DocumentOutcome:
    chunks = split_into_chunks(doc.text, config.chunk) if doc else []
    strategy = STRATEGIES[config.strategy]
    params = dict(config.strategy_params)
    if "doc_id" in inspect.signature(strategy).parameters:
        params["doc_id"] = doc_id
    result = strategy(chunks, model, **params)
    assert isinstance(result, StrategyResult)
    scores = {}
    for name, metric_params in config.metrics.items():
        scored = METRICS[name](doc, result.summary, judge, **metric_params)
        assert isinstance(scored, MetricResult)
        scores[name] = scored
    return DocumentOutcome(doc_id, result, scores)


def _work_items(config: RunConfig) -> list[tuple[str, Document | None]]:
    """(doc_id, source document or None) pairs to process.

    Precomputed summaries decide the ids themselves; their sources are optional.
    """
    docs = load_documents(config.data.source, config.data.path, config.data.limit)
    if config.strategy != "precomputed":
        if not docs:
            raise DataError("no documents to summarize; choose data=sample or data=dir data.path=...")
        return [(d.doc_id, d) for d in docs]
    by_id = {d.doc_id: d for d in docs}
    ids = precomputed.document_ids(str(config.strategy_params.get("summaries") or ""))
    return [(doc_id, by_id.get(doc_id)) for doc_id in ids][: config.data.limit or None]


def run_experiment(config: RunConfig) -> RunResult:
    """Run one job end to end and log it as one MLflow run."""
    progress = Progress(config.progress, label=config.strategy)
    with tempfile.TemporaryDirectory(prefix="runner-") as tmp:
        calls = CallLog(Path(tmp) / "calls.jsonl", on_call=progress.on_call)
        model, judge = _gateways(config, calls)
        tracker = Tracker(config.tracking_uri, config.experiment, _artifact_root(config))
        name = run_name(config.overrides)
        tracker.start(name, tags={})
        started = time.perf_counter()
        try:
            log_setup(tracker, config, model, judge)
            items = _work_items(config)
            progress.set_total(len(items))
            outcomes = _run_documents(items, config, model, judge, progress)
            system = log_outcomes(tracker, outcomes, calls.totals, time.perf_counter() - started)
            tracker.log_file(Path(tmp) / "calls.jsonl")
            tracker.finish(ok=True)
        except BaseException as err:
            tracker.log_file(Path(tmp) / "calls.jsonl")
            tracker.finish(ok=False, reason=f"{type(err).__name__}: {err}")
            raise
        finally:
            progress.close()
    return RunResult(
        run_id=tracker.run_id,
        run_name=name,
        summaries={o.doc_id: o.result.summary for o in outcomes},
        system_metrics=system,
        totals=calls.totals,
        tracking_uri=config.tracking_uri,
    )


def _run_documents(
    items: list[tuple[str, Document | None]],
    config: RunConfig,
    model: Gateway,
    judge: Gateway | None,
    progress: Progress,
) -> list[DocumentOutcome]:
    """Documents concurrently, bounded by the model's limit (one at a time for local)."""
    workers = max(1, min(len(items), model.concurrency))

    def one(item: tuple[str, Document | None]) -> DocumentOutcome:
        outcome = _process(item[0], item[1], config, model, judge)
        progress.doc_done()
        return outcome

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, items))


def _artifact_root(config: RunConfig) -> Path | None:
    """Artifacts beside the default sqlite store, in mlruns/artifacts/."""
    if config.tracking_uri.startswith("sqlite:///"):
        return Path(config.tracking_uri[len("sqlite:///") :]).parent / "artifacts"
    return None
