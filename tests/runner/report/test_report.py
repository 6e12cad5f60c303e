"""runner.report.make against runs written here with MlflowClient (not by the runner's writer),
and once against real runs made by the runner; expected numbers are computed here from the
per-document values, with ``statistics``, not with the report's code."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from runner.api.errors import ConfigError, DataError
from runner.report.config import ReportConfig, build_report_config
from runner.report.make import Report, make_report
from runner.report.table import bootstrap_ci
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.test_app import overrides, run

REPO = Path(__file__).resolve().parents[3]
T0 = 1_700_000_000_000  # explicit start times (ms): "newest" must not depend on timing
SCORE, LENGTH, NOVEL, REPEATED = (
    "booookscore/score",
    "stats/length_tokens",
    "stats/novel_trigrams_pct",
    "stats/repeated_trigrams_pct",
)
ENTITY, SALIENCE = "booookscore/type/entity_omission", "booookscore/type/salience"
MODEL_IDS = {"gpt4": "openai/gpt-4o", "claude": "anthropic/claude-3-opus"}

# Per-document values of each (strategy, model) configuration: {metric: {doc: value}}.
# hier/gpt4 has a repeat run (param repeat=1, other fingerprint) adding documents d5, d6: they
# pool. (Same params with another fingerprint would be a newer version of the cell instead.)
VALUES: dict[tuple[str, str], dict[str, dict[str, float]]] = {
    ("hier", "gpt4"): {
        SCORE: {"d1": 81.5, "d2": 90.0, "d3": 72.25, "d4": 100.0},
        LENGTH: {"d1": 512.0, "d2": 640.0, "d3": 498.0, "d4": 701.0},
        NOVEL: {"d1": 40.0, "d2": 35.5, "d3": 51.0, "d4": 44.0},
        REPEATED: {"d1": 0.0, "d2": 0.0, "d3": 0.0, "d4": 0.0},  # all equal: CI of width 0
        ENTITY: {"d1": 10.0, "d2": 5.0, "d3": 20.0, "d4": 0.0},
    },
    ("hier", "claude"): {
        SCORE: {"d1": 77.0, "d2": 69.5, "d3": 88.0, "d4": 91.0},
        LENGTH: {"d1": 820.0, "d2": 790.0, "d3": 905.0, "d4": 760.0},
        NOVEL: {"d1": 60.0, "d2": 62.5, "d3": 58.0, "d4": 55.0},
        REPEATED: {"d1": 1.5, "d2": 0.5, "d3": 2.0, "d4": 0.0},
        ENTITY: {"d1": 15.0, "d2": 25.0, "d3": 5.0, "d4": 10.0},
    },
    ("summit", "gpt4"): {
        SCORE: {"d1": 95.0, "d2": 97.5, "d3": 88.0, "d4": 92.0},
        LENGTH: {"d1": 300.0, "d2": 285.0, "d3": 333.0, "d4": 310.0},
        NOVEL: {"d1": 30.0, "d2": 28.0, "d3": 33.0, "d4": 31.5},
        REPEATED: {"d1": 0.0, "d2": 0.5, "d3": 0.0, "d4": 0.0},
        SALIENCE: {"d1": 5.0, "d2": 0.0, "d3": 10.0, "d4": 5.0},
    },
    ("summit", "claude"): {
        SCORE: {"d1": 85.0, "d2": 79.0, "d3": 90.5, "d4": 83.0},
        LENGTH: {"d1": 410.0, "d2": 395.0, "d3": 450.0, "d4": 402.0},
        NOVEL: {"d1": 45.0, "d2": 47.0, "d3": 41.0, "d4": 44.5},
        REPEATED: {"d1": 0.5, "d2": 0.0, "d3": 1.0, "d4": 0.0},
        SALIENCE: {"d1": 10.0, "d2": 5.0, "d3": 0.0, "d4": 15.0},
    },
}
REPEAT = {
    SCORE: {"d5": 60.0, "d6": 70.0},
    LENGTH: {"d5": 550.0, "d6": 575.0},
    NOVEL: {"d5": 39.0, "d6": 42.0},
    REPEATED: {"d5": 0.0, "d6": 0.0},
    ENTITY: {"d5": 30.0, "d6": 0.0},
}
SUPERSEDED = {SCORE: {"d1": 1.0, "d2": 2.0}, LENGTH: {"d1": 9999.0, "d2": 9999.0}}  # would show
SUMMIT_CURVE = {"gpt4": [3.0, 3.8, 4.2], "claude": [2.5, 3.5]}


class Store:
    """A tracking store with known runs; ``ids`` maps the names used below to run ids."""

    def __init__(self, root: Path) -> None:
        self.uri = f"sqlite:///{root / 'mlflow.db'}"
        self.client = MlflowClient(tracking_uri=self.uri)
        self.artifacts = (root / "artifacts").as_uri()
        self.experiments: dict[str, str] = {}
        self.ids: dict[str, str] = {}

    def run(
        self,
        name: str,
        start: int,
        status: str | None,
        *,
        experiment: str = "summarization",
        tags: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        values: dict[str, dict[str, float]] | None = None,
        curve: list[float] | None = None,
    ) -> str:
        if experiment not in self.experiments:
            self.experiments[experiment] = self.client.create_experiment(
                experiment, artifact_location=f"{self.artifacts}/{experiment}"
            )
        run_id = self.client.create_run(
            self.experiments[experiment], start_time=T0 + start, tags=tags or {}, run_name=name
        ).info.run_id
        values = values or {}
        # What the runner logs: the mean over documents per metric, and scores.json per document.
        metrics = [Metric(k, statistics.mean(v.values()), T0, 0) for k, v in values.items()]
        metrics += [Metric("strategy/score", v, T0, step) for step, v in enumerate(curve or [])]
        self.client.log_batch(
            run_id, params=[Param(k, v) for k, v in (params or {}).items()], metrics=metrics
        )
        if values:
            docs = sorted({d for v in values.values() for d in v})
            scores = {d: {k: v[d] for k, v in values.items() if d in v} for d in docs}
            self.client.log_text(run_id, json.dumps(scores), "scores.json")
        if status is not None:
            self.client.set_terminated(run_id, status, end_time=T0 + start + 50)
        self.ids[name] = run_id
        return run_id


def child_params(strategy: str, model: str, concurrency: str = "4") -> dict[str, str]:
    params = {
        "strategy": strategy,
        "model": model,
        "model.model": MODEL_IDS[model],
        "chunk": "2048",
        "roles": "model" if strategy == "hier" else "model,evaluator",
        "model.concurrency": concurrency,
    }  # varies, but says how calls ran: never a row
    params.update(
        {"strategy.levels": "3"} if strategy == "hier" else {"strategy.max_iterations": "5"}
    )
    return params


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    s = Store(tmp_path_factory.mktemp("report-store"))
    old = s.run("old-sweep", 0, "FINISHED", tags={"runner.kind": "sweep"})
    s.run(
        "old-child",
        10,
        "FINISHED",
        tags={"mlflow.parentRunId": old, "fingerprint": "f" * 16},
        params=child_params("hier", "gpt4"),
        values={SCORE: {"d1": 50.0}, LENGTH: {"d1": 100.0}},
    )
    parent = s.run("sweep", 100, None, tags={"runner.kind": "sweep"})  # still RUNNING: that is fine
    child = {"mlflow.parentRunId": parent}
    s.run(
        "claude-summit-old",
        101,
        "FINISHED",
        tags={**child, "fingerprint": "d" * 16},
        params=child_params("summit", "claude"),
        values=SUPERSEDED,
    )
    for i, ((strategy, model), values) in enumerate(VALUES.items()):
        s.run(
            f"{model}-{strategy}",
            110 + i,
            "FINISHED",
            tags={**child, "fingerprint": "abcd"[i] * 16},
            params=child_params(strategy, model, concurrency=str(4 + i)),
            values=values,
            curve=SUMMIT_CURVE[model] if strategy == "summit" else None,
        )
    s.run(
        "gpt4-hier-again",
        120,
        "FINISHED",
        tags={**child, "fingerprint": "e" * 16},
        params=child_params("hier", "gpt4") | {"repeat": "1"},
        values=REPEAT,
    )
    s.run(
        "llama2-hier",
        130,
        "FAILED",
        tags={
            **child,
            "fingerprint": "9" * 16,
            "failure": "ModelUnreachableError: cannot reach http://127.0.0.1:9/v1\nTraceback ...",
        },
        params=child_params("hier", "gpt4") | {"model": "llama2"},
    )
    s.run(
        "mixtral-summit",
        131,
        "FAILED",
        tags={
            **child,
            "fingerprint": "7" * 16,
            "runner.stopped": "budget",
            "failure": "BudgetExceeded: sweep budget of $5.00 reached",
        },
        params=child_params("summit", "gpt4") | {"model": "mixtral"},
        values={SCORE: {"d1": 0.0}},  # logged before it stopped: still not averaged
    )
    s.run(
        "loose",
        140,
        "FINISHED",
        tags={"fingerprint": "8" * 16},
        params=child_params("hier", "gpt4"),
        values={SCORE: {"d1": 0.0}},
    )  # in the experiment, not in the sweep
    for i, chunk in enumerate(("512", "1024")):
        s.run(
            f"chunk-{chunk}",
            200 + i,
            "FINISHED",
            experiment="nosweep",
            params={"strategy": "baseline", "chunk": chunk},
            values={LENGTH: {"a": 100.0 + i, "b": 300.0 + i}},
        )
    return s


@pytest.fixture(scope="module")
def report(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Report:
    out = tmp_path_factory.mktemp("report-out")
    return make_report(ReportConfig(uri=store.uri, experiment="summarization", out=out))


def pooled(strategy: str, model: str, metric: str) -> list[float]:
    values = list(VALUES[(strategy, model)].get(metric, {}).values())
    if (strategy, model) == ("hier", "gpt4"):
        values += list(REPEAT.get(metric, {}).values())
    return values


def recomputed_ci(values: list[float], seed: int = 0, resamples: int = 1000) -> tuple[float, float]:
    """The documented recipe (sorted values, fresh default_rng(seed), percentiles), redone here."""
    data = np.sort(np.array(values))
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


CELLS = [(s, m, metric) for (s, m) in VALUES for metric in (SCORE, LENGTH, NOVEL, REPEATED)]


def test_latest_sweep_layout_and_selection(report: Report, store: Store) -> None:
    assert report.selection.sweep_id == store.ids["sweep"]
    assert report.table.layout.columns == ("strategy",) and report.table.layout.rows == ("model",)
    assert set(report.table.layout.implied) == {
        "model.model",
        "roles",
        "strategy.levels",
        "strategy.max_iterations",
    }
    assert report.table.rows == (("claude",), ("gpt4",)) and report.table.columns == (
        ("hier",),
        ("summit",),
    )
    assert report.table.metrics == (SCORE, LENGTH, NOVEL, REPEATED)
    averaged = {
        store.ids[n]
        for n in ("gpt4-hier", "claude-hier", "gpt4-summit", "claude-summit", "gpt4-hier-again")
    }
    assert {r.run_id for r in report.selection.runs} == averaged


@pytest.mark.parametrize("strategy,model,metric", CELLS)
def test_cell_mean_is_the_mean_over_pooled_documents(
    report: Report, strategy: str, model: str, metric: str
) -> None:
    cell = report.table.cell((model,), (strategy,), metric)
    values = pooled(strategy, model, metric)
    assert cell is not None and cell.n == len(values)
    assert cell.mean == pytest.approx(statistics.mean(values))
    assert cell.low <= cell.mean <= cell.high
    assert (cell.low, cell.high) == pytest.approx(recomputed_ci(values))


def test_repeats_pool_and_superseded_runs_do_not(report: Report) -> None:
    repeat = report.table.cell(("gpt4",), ("hier",), SCORE)
    assert repeat is not None and repeat.n == 6 and repeat.runs == 2
    assert repeat.mean == pytest.approx((81.5 + 90.0 + 72.25 + 100.0 + 60.0 + 70.0) / 6)
    newest = report.table.cell(("claude",), ("summit",), LENGTH)
    assert newest is not None and newest.n == 4 and newest.mean == pytest.approx(414.25)


def test_all_equal_documents_give_a_zero_width_interval(report: Report) -> None:
    cell = report.table.cell(("gpt4",), ("hier",), REPEATED)
    assert cell is not None and cell.low == cell.high == cell.mean == 0.0


def test_bootstrap_agrees_with_the_normal_approximation_on_many_values() -> None:
    values = [float(v % 37) for v in range(400)]
    low, high = bootstrap_ci(values, resamples=4000, confidence=0.95, seed=3)
    half = 1.959964 * statistics.pstdev(values) / math.sqrt(len(values))
    mean = statistics.mean(values)
    assert low == pytest.approx(mean - half, abs=0.1 * half)
    assert high == pytest.approx(mean + half, abs=0.1 * half)
    assert bootstrap_ci([4.5], resamples=100, confidence=0.95, seed=0) == (4.5, 4.5)
    wider = bootstrap_ci(values, resamples=4000, confidence=0.99, seed=3)
    assert wider[0] < low and wider[1] > high


def test_markdown_table_and_footnote(report: Report, store: Store) -> None:
    lines = report.markdown.splitlines()
    assert lines[0] == (
        "| model | hier: BooookScore | hier: Avg length (tokens) | hier: % novel trigrams | "
        "hier: % repeated trigrams | summit: BooookScore | summit: Avg length (tokens) | "
        "summit: % novel trigrams | summit: % repeated trigrams |"
    )
    claude = statistics.mean(VALUES[("hier", "claude")][SCORE].values())
    assert lines[2].startswith(f"| claude | {claude:.1f} [")
    footnote = report.markdown.split("Not averaged (3 runs):")[1]
    failed = store.ids["llama2-hier"][:8]
    assert (
        f"- llama2-hier ({failed}): FAILED: ModelUnreachableError: cannot reach "
        "http://127.0.0.1:9/v1\n"
    ) in footnote
    assert (
        f"- claude-summit-old ({store.ids['claude-summit-old'][:8]}): superseded: same fingerprint"
        in footnote
    )
    budget = store.ids["mixtral-summit"][:8]
    assert f"- mixtral-summit ({budget}): FAILED (budget): BudgetExceeded: sweep budget" in footnote
    assert "loose" not in report.markdown and "old-child" not in report.markdown
    table = report.markdown.split("Not averaged")[0]
    assert "llama2" not in table and "mixtral" not in table


def test_files_latex_and_csv(report: Report) -> None:
    names = sorted(p.name for p in report.files)
    assert names == [
        "error_types.png",
        "iterations.png",
        "score_vs_length.png",
        "table.csv",
        "table.md",
        "table.tex",
    ]
    tex = (report.out / "table.tex").read_text()
    for rule in (
        "\\toprule",
        "\\midrule",
        "\\bottomrule",
        "\\cmidrule(lr){2-5}",
        "\\cmidrule(lr){6-9}",
    ):
        assert rule in tex
    assert "\\multicolumn{4}{c}{summit}" in tex and "\\% novel trigrams" in tex
    assert "llama2-hier" in tex.split("Not averaged: ")[1] and "FAILED (budget)" in tex
    rows = list(csv.DictReader(io.StringIO((report.out / "table.csv").read_text())))
    assert len(rows) == len(CELLS)
    for row in rows:
        values = pooled(row["strategy"], row["model"], row["metric"])
        assert float(row["mean"]) == pytest.approx(statistics.mean(values))
        assert (float(row["ci_low"]), float(row["ci_high"])) == pytest.approx(recomputed_ci(values))
        assert int(row["n"]) == len(values)
    md = (report.out / "table.md").read_text()
    assert md.startswith("# Report: the latest sweep") and report.markdown in md


def test_plots_are_png(report: Report) -> None:
    for name in ("error_types.png", "score_vs_length.png", "iterations.png"):
        data = (report.out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_outputs_are_logged_to_the_sweep_parent(report: Report, store: Store) -> None:
    logged = store.client.list_artifacts(store.ids["sweep"], "report")
    assert sorted(Path(a.path).name for a in logged) == sorted(p.name for p in report.files)


def test_explicit_sweep_by_id(store: Store, tmp_path: Path) -> None:
    old = make_report(
        ReportConfig(
            uri=store.uri,
            experiment="summarization",
            out=tmp_path,
            sweep=store.ids["old-sweep"],
            plots=False,
        )
    )
    assert [r.run_id for r in old.selection.runs] == [store.ids["old-child"]]
    cell = old.table.cell((), (), SCORE)
    assert cell is not None and cell.mean == 50.0 and cell.low == cell.high == 50.0
    assert "| configuration | BooookScore |" in old.markdown


def test_experiment_without_sweep_reads_all_runs(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = make_report(ReportConfig(uri=store.uri, experiment="nosweep"))
    assert done.out == tmp_path / "reports" / "nosweep-all" and done.logged_to is None
    assert "all 2 runs of experiment 'nosweep' (it has no sweep)" in done.header
    assert done.table.layout.rows == ("chunk",) and done.table.rows == (("512",), ("1024",))
    assert done.table.metrics == (LENGTH,)
    assert "skipped metric booookscore/score: no selected run has it" in done.notes
    assert sum("skipped" in n and ".png" in n for n in done.notes) == 3
    assert sorted(p.name for p in done.files) == ["table.csv", "table.md", "table.tex"]


@pytest.mark.parametrize(
    "change,message",
    [
        ({"sweep": "nope"}, "sweep=nope is not a run of experiment 'summarization'"),
        ({"rows": ("temperature",)}, "rows: 'temperature' is not a param of the selected runs"),
        ({"metrics": ("cost_usd",)}, "none of metric_keys=['cost_usd'] is in the selected runs"),
        ({"experiment": "absent"}, "experiment 'absent' does not exist in sqlite:///"),
        ({"uri": "sqlite:////nonexistent/mlflow.db"}, "names no database file"),
    ],
)
def test_bad_selection_is_one_clear_error(
    store: Store, tmp_path: Path, change: dict[str, object], message: str
) -> None:
    config = {"uri": store.uri, "experiment": "summarization", "out": tmp_path, **change}
    with pytest.raises(
        (ConfigError, DataError), match=message.replace("[", r"\[").replace("]", r"\]")
    ):
        make_report(ReportConfig(**config))  # type: ignore[arg-type]
    assert not Path("/nonexistent").exists()


GOOD = {
    "tracking": {"uri": None, "experiment": "x"},
    "sweep": None,
    "out": None,
    "metric_keys": [SCORE],
    "columns": None,
    "rows": None,
    "resamples": 1000,
    "confidence": 0.95,
    "seed": 0,
    "plots": True,
}


@pytest.mark.parametrize(
    "change,message",
    [
        ({"resamples": 5}, "resamples=5 must be a whole number >= 100"),
        ({"confidence": 1.5}, "confidence=1.5 must be between 0 and 1"),
        ({"seed": "abc"}, "seed=abc must be a whole number"),
        ({"metric_keys": []}, "metric_keys=\\[\\] names no metric"),
        ({"rows": [1]}, "rows=\\[1\\] must be a list of names"),
        ({"plots": "maybe"}, "plots=maybe must be true or false"),
        ({"scatter": {"x": "stats/length_tokens"}}, "must name two metrics, x and y"),
        ({"scatter": {"x": "a", "y": "b", "z": "c"}}, "must name two metrics, x and y"),
        ({"extra": 1}, "extra is not a report setting"),
    ],
)
def test_bad_values_are_config_errors(change: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_report_config({**GOOD, **change})


def test_config_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    config = build_report_config(
        {**GOOD, "columns": "strategy", "tracking": {"uri": None, "experiment": None}}
    )
    assert config.uri == f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    assert config.experiment == "summarization" and config.columns == ("strategy",)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-m", "runner.report.make", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_cli_prints_the_table_and_writes_the_files(store: Store, tmp_path: Path) -> None:
    done = cli(f"tracking.uri={store.uri}", "tracking.experiment=summarization", f"out={tmp_path}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        "| model | hier: BooookScore |" in done.stdout and "Not averaged (3 runs):" in done.stdout
    )
    assert f"wrote 6 files to {tmp_path}" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "error_types.png",
        "iterations.png",
        "score_vs_length.png",
        "table.csv",
        "table.md",
        "table.tex",
    ]
    assert not (REPO / ".hydra").exists()


@pytest.mark.parametrize(
    "arg,message",
    [
        (
            "sweep=nope",
            "error: sweep=nope is not a run of experiment 'summarization'; give a parent run id",
        ),
        (
            "metrics=[cost_usd]",
            "error: metrics= picks the runner's metric plugins; the report's list",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    store: Store, tmp_path: Path, arg: str, message: str
) -> None:
    done = cli(f"tracking.uri={store.uri}", f"out={tmp_path}", arg)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith(message), (
        done.stderr
    )


def test_report_of_real_runs_with_two_chunk_sizes(
    store: Store, server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Two single runs made by the runner (no sweep), in an experiment of the shared store."""
    where = {"tracking.uri": store.uri, "cache.dir": str(tmp_path / "cache")}
    ids = {
        chunk: run(
            overrides(
                server.url, where, "tracking.experiment=real", "data.limit=2", f"chunk={chunk}"
            )
        ).run_id
        for chunk in (512, 1024)
    }
    done = make_report(
        ReportConfig(uri=store.uri, experiment="real", out=tmp_path / "out", plots=False)
    )
    assert "all 2 runs of experiment 'real' (it has no sweep)" in done.header
    assert done.table.layout.rows == ("chunk",) and done.table.rows == (("512",), ("1024",))
    for chunk, run_id in ids.items():
        local = store.client.download_artifacts(run_id, "scores.json", str(tmp_path))
        scores = json.loads(Path(local).read_text())
        expected = statistics.mean(doc[LENGTH] for doc in scores.values())
        cell = done.table.cell((str(chunk),), (), LENGTH)
        assert cell is not None and cell.n == 2 and cell.mean == pytest.approx(expected)
