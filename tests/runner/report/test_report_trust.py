"""The report never passes off the wrong runs, a typo or an empty axis as a result.

Stores are written here with MlflowClient and explicit start times (``Store`` of
``test_report``); expected numbers come from ``statistics`` over the values written, and
figures are caught as ``Figure`` objects when the report saves them, so their axes and texts
are checked as drawn into the PNG files.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from metrics.booookscore import CATEGORIES
from runner.api.errors import DataError
from runner.plugins import values as value_facts
from runner.report import plots as report_plots
from runner.report.config import ReportConfig
from runner.report.make import make_report
from runner.report.runs import layout
from runner.report.table import Table, build_table
from runner.tracking.reader import RunRecord
from tests.runner.report.test_report import LENGTH, SCORE, Store, cli

EXPERIMENT = "trust"
GOOD = {
    SCORE: {"d1": 80.0, "d2": 90.0, "d3": 70.0},
    LENGTH: {"d1": 300.0, "d2": 340.0, "d3": 320.0},
}
FAILURES = [
    "ModelUnreachableError: cannot reach http://127.0.0.1:9/v1\nTraceback ...",
    "AuthError: OPENAI_API_KEY is not set",
    "ModelUnreachableError: cannot reach http://127.0.0.1:9/v1",
]
RERUN = "strategy=hier,summit model=gpt4"


def good_sweep(s: Store) -> str:
    """An older sweep with two FINISHED children: the one a report must read."""
    parent = s.run("good", 0, "FINISHED", experiment=EXPERIMENT, tags={"runner.kind": "sweep"})
    for i, strategy in enumerate(("hier", "summit")):
        s.run(
            f"good-{strategy}",
            10 + i,
            "FINISHED",
            experiment=EXPERIMENT,
            tags={"mlflow.parentRunId": parent, "fingerprint": f"{i}" * 16},
            params={"strategy": strategy},
            values=GOOD,
        )
    return parent


def failed_sweep(s: Store, start: int) -> str:
    """A sweep whose three children all FAILED, each with its ``failure`` tag."""
    parent = s.run(
        "all-failed",
        start,
        "FINISHED",
        experiment=EXPERIMENT,
        tags={"runner.kind": "sweep"},
        params={"sweep.overrides": RERUN},
    )
    for i, failure in enumerate(FAILURES):
        s.run(
            f"failed-{i}",
            start + 1 + i,
            "FAILED",
            experiment=EXPERIMENT,
            tags={"mlflow.parentRunId": parent, "fingerprint": f"f{i}" * 8, "failure": failure},
            params={"strategy": "hier"},
        )
    return parent


def empty_sweep(s: Store, start: int) -> str:
    """A sweep parent that ended without a single child (every cell was refused at start)."""
    return s.run("empty", start, "FINISHED", experiment=EXPERIMENT, tags={"runner.kind": "sweep"})


def running_sweep(s: Store, start: int) -> str:
    """A sweep still running (parent and its one child RUNNING): nothing to report yet."""
    parent = s.run("running", start, None, experiment=EXPERIMENT, tags={"runner.kind": "sweep"})
    s.run(
        "running-hier",
        start + 1,
        None,
        experiment=EXPERIMENT,
        tags={"mlflow.parentRunId": parent, "fingerprint": "r" * 16},
        params={"strategy": "hier"},
    )
    return parent


NEWER = {
    "all-failed": (failed_sweep, "no FINISHED child (3 FAILED)"),
    "empty": (empty_sweep, "no child run"),
    "running": (
        running_sweep,
        "no FINISHED child yet (1 RUNNING; its parent run is still RUNNING)",
    ),
}


@pytest.mark.parametrize("newer", sorted(NEWER))
def test_latest_passes_over_a_newer_sweep_without_a_finished_child(
    tmp_path: Path, newer: str
) -> None:
    s = Store(tmp_path)
    good = good_sweep(s)
    make, why = NEWER[newer]
    passed = make(s, 100)
    done = make_report(
        ReportConfig(uri=s.uri, experiment=EXPERIMENT, out=tmp_path / "out", plots=False)
    )
    assert done.selection.sweep_id == good
    assert {r.run_id for r in done.selection.runs} == {s.ids["good-hier"], s.ids["good-summit"]}
    cell = done.table.cell((), ("hier",), SCORE)
    assert cell is not None and cell.mean == pytest.approx(statistics.mean(GOOD[SCORE].values()))
    line = f"passed over sweep {passed} ({newer}): {why}"
    assert done.selection.passed_over == (line,)
    assert line in done.text().splitlines() and line in (done.out / "table.md").read_text()
    assert "1 newer passed over" in done.header.splitlines()[0]


def test_every_newer_sweep_passed_over_is_named_newest_first(tmp_path: Path) -> None:
    s = Store(tmp_path)
    good = good_sweep(s)
    ids = [failed_sweep(s, 100), empty_sweep(s, 200), running_sweep(s, 300)]
    done = make_report(
        ReportConfig(uri=s.uri, experiment=EXPERIMENT, out=tmp_path / "out", plots=False)
    )
    assert done.selection.sweep_id == good
    assert [line.split()[3] for line in done.selection.passed_over] == ids[::-1]


def test_no_sweep_with_a_finished_child_is_one_error(tmp_path: Path) -> None:
    s = Store(tmp_path)
    failed = failed_sweep(s, 0)
    empty = empty_sweep(s, 100)
    with pytest.raises(DataError) as caught:
        make_report(ReportConfig(uri=s.uri, experiment=EXPERIMENT, out=tmp_path, plots=False))
    message = str(caught.value)
    assert message.startswith(
        f"none of the 2 sweeps of experiment '{EXPERIMENT}' has a FINISHED run to report "
        f"(sweep {empty} (empty): no child run, sweep {failed} (all-failed): no FINISHED child "
        "(3 FAILED)); "
    )
    newest = FAILURES[-1].splitlines()[0]  # the empty sweep has none: its older one says why
    assert f"(newest: {newest}); fix that and rerun python -m runner -m {RERUN} " in message
    assert "\n" not in message


def test_explicit_all_failed_sweep_names_its_failures(tmp_path: Path) -> None:
    s = Store(tmp_path)
    good_sweep(s)
    failed = failed_sweep(s, 100)
    with pytest.raises(DataError) as caught:
        make_report(
            ReportConfig(uri=s.uri, experiment=EXPERIMENT, sweep=failed, out=tmp_path, plots=False)
        )
    message = str(caught.value)
    newest = FAILURES[-1].splitlines()[0]
    assert message == (
        f"sweep {failed} ('all-failed') of experiment '{EXPERIMENT}' has no run to report: "
        f"no FINISHED child (3 FAILED); each child's 'failure' tag says why (newest: {newest}); "
        f"fix that and rerun python -m runner -m {RERUN} "
        "(it reruns only the cells without a FINISHED run)"
    )


def typo_store(tmp_path: Path) -> Store:
    """Experiments local_demo (2 runs), summarization (5 runs) and an empty one."""
    s = Store(tmp_path)
    for i in range(2):
        s.run(f"demo-{i}", i, "FINISHED", experiment="local_demo")
    for i in range(5):
        s.run(f"run-{i}", 10 + i, "FAILED" if i else "FINISHED", experiment="summarization")
    s.client.create_experiment("nothing_yet")
    return s


def test_unknown_experiment_lists_the_experiments_there(tmp_path: Path) -> None:
    s = typo_store(tmp_path)
    with pytest.raises(DataError) as caught:
        make_report(ReportConfig(uri=s.uri, experiment="local_dmeo", out=tmp_path))
    assert str(caught.value) == (
        f"experiment 'local_dmeo' does not exist in {s.uri}; experiments there: "
        "local_demo (2 runs), nothing_yet (0 runs), summarization (5 runs); "
        "set tracking.experiment=<name>"
    )


def test_experiment_without_runs_says_so_distinctly(tmp_path: Path) -> None:
    s = typo_store(tmp_path)
    with pytest.raises(DataError) as caught:
        make_report(ReportConfig(uri=s.uri, experiment="nothing_yet", out=tmp_path))
    assert str(caught.value) == (
        f"experiment 'nothing_yet' exists in {s.uri} but has no runs; other experiments there: "
        "local_demo (2 runs), summarization (5 runs); set tracking.experiment=<name>"
    )


def test_cli_typo_in_experiment_is_one_line_and_exit_2(tmp_path: Path) -> None:
    s = typo_store(tmp_path)
    done = cli(f"tracking.uri={s.uri}", "tracking.experiment=local_dmeo", f"out={tmp_path}")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: experiment 'local_dmeo' does not exist in ")
    assert "experiments there: local_demo (2 runs), nothing_yet (0 runs)" in line


# Figures: a table built from runs made here, the figure caught as the report saves it.


def record(run_id: str, strategy: str) -> RunRecord:
    params = {"strategy": strategy, "metrics": "booookscore,stats"}  # their declared VALUES
    return RunRecord(run_id, run_id, "1", "FINISHED", 0, 1, params, {}, {})


def table(scores: dict[str, dict[str, dict[str, float]]]) -> Table:
    """Cells of every metric in ``scores`` (run id -> doc -> values), run ids 'hier-...' etc."""
    runs = [record(run_id, run_id.split("-")[0]) for run_id in scores]
    metrics = sorted({m for docs in scores.values() for v in docs.values() for m in v})
    grid = layout(runs, None, None)
    return build_table(runs, scores, grid, metrics, resamples=1000, confidence=0.95, seed=0)


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """Every Figure saved while the test runs (and still saved to its file)."""
    figures: list[Figure] = []
    original = Figure.savefig

    def spy(self: Figure, *args: object, **kwargs: object) -> None:
        figures.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    return figures


KINDS = tuple((label, (f"booookscore/{key}",)) for label, key in CATEGORIES)
"""BooookScore's error types as a run under the label booookscore records them."""
ZERO_TYPES = {names[0]: 0.0 for _, names in KINDS}


def test_error_types_without_a_flagged_sentence_says_so(
    tmp_path: Path, saved: list[Figure]
) -> None:
    scores = {
        "hier-1": {"d1": {SCORE: 100.0, **ZERO_TYPES}, "d2": {SCORE: 100.0, **ZERO_TYPES}},
        "incremental-1": {"d1": {SCORE: 100.0, **ZERO_TYPES}},
    }
    plot = report_plots.error_types(table(scores), KINDS, tmp_path / "error_types.png")
    assert plot.path is not None and plot.path.read_bytes()[:4] == b"\x89PNG"
    (figure,) = saved
    panels = figure.get_axes()
    assert len(panels) == 2
    for axes in panels:
        assert [t.get_text() for t in axes.texts] == ["no sentence flagged"]
        assert not axes.patches  # no bars of height zero around an axis at 0


def test_error_types_flags_drawn_beside_a_panel_without_any(
    tmp_path: Path, saved: list[Figure]
) -> None:
    salience = "booookscore/type/salience"
    flagged = [10.0, 0.0, 5.0]
    scores = {
        "hier-1": {"d1": {**ZERO_TYPES}},
        "summit-1": {f"d{i}": {**ZERO_TYPES, salience: v} for i, v in enumerate(flagged)},
    }
    report_plots.error_types(table(scores), KINDS, tmp_path / "error_types.png")
    (figure,) = saved
    hier, summit = figure.get_axes()
    assert [t.get_text() for t in hier.texts] == ["no sentence flagged"] and not hier.patches
    assert not summit.texts and summit.get_ylim()[0] == 0.0
    heights = [bar.get_height() for bar in summit.patches]
    assert max(heights) == pytest.approx(statistics.mean(flagged))


def test_score_axis_stays_within_0_to_100(tmp_path: Path, saved: list[Figure]) -> None:
    perfect, spread = [100.0, 100.0, 98.0, 100.0], [80.0, 90.0, 70.0, 85.0]
    scores = {
        "hier-1": {f"d{i}": {SCORE: v, LENGTH: 300.0 + i} for i, v in enumerate(perfect)},
        "summit-1": {f"d{i}": {SCORE: v, LENGTH: 500.0 + i} for i, v in enumerate(spread)},
    }
    cells = table(scores)
    report_plots.score_vs_length(cells, tmp_path / "score_vs_length.png", LENGTH, SCORE)
    (figure,) = saved
    (axes,) = figure.get_axes()
    low, high = axes.get_ylim()
    assert low >= 0.0 and high <= 100.0
    summit, hier = cells.cell((), ("summit",), SCORE), cells.cell((), ("hier",), SCORE)
    assert summit is not None and hier is not None
    assert low <= summit.low and high >= hier.high == 100.0  # every point and interval in view


def visible(ticks: list[float], limits: tuple[float, float]) -> list[float]:
    return [t for t in ticks if limits[0] <= t <= limits[1]]


@pytest.mark.parametrize("series", [[3.0], [4.0, 4.0, 4.0], [2.5, 3.5, 3.8, 4.6]])
def test_summit_axes_show_whole_iterations_and_the_1_to_5_scale(
    tmp_path: Path, saved: list[Figure], series: list[float]
) -> None:
    runs = [record("summit-1", "summit")]
    grid = layout(runs, None, None)
    history = {"summit-1": {"strategy/score": list(enumerate(series))}}
    facts = value_facts.recorded({}, {"strategy": "summit"})  # SummIt's declared VALUES
    assert report_plots.series_names(facts) == ["strategy/score"]
    report_plots.series_curves(runs, grid, history, facts, tmp_path / "iterations.png")
    (figure,) = saved
    (axes,) = figure.get_axes()
    xs = visible(list(axes.get_xticks()), axes.get_xlim())
    assert xs == [float(i) for i in range(1, len(series) + 1)]  # iteration i at step i - 1
    low, high = axes.get_ylim()
    assert low <= 1.0 and high >= 5.0  # SummIt's evaluator scale (strategies/summit/feedback.py)
    ys = visible(list(axes.get_yticks()), (low, high))
    assert ys == [1.0, 2.0, 3.0, 4.0, 5.0]
