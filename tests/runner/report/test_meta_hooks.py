"""A metric's own meta tables (``meta_tables``, ``runner.api.meta``): a researcher's installed
metric gets its table into ``report meta=true`` as the faithfulness metric does, and a hook
that breaks the contract is one line naming the metric."""

from __future__ import annotations

import csv
import math
import types
from pathlib import Path
from typing import Any

import pytest

from runner.api import ClaimsJudgment
from runner.api.errors import DataError
from runner.api.meta import Boot, MetaInput, MetaTable, MetaTables, RunView
from runner.human.record import record_human_run
from runner.plugins.contract import check_contract
from runner.report.config import ReportConfig
from runner.report.make import make_report
from runner.report.meta.hooks import plugin_tables
from runner.report.meta.read import MetaInputs
from tests.helpers.plugins import register
from tests.runner.report.test_meta_faithfulness import (
    claims_judgment,
    people,
    summary_of,
    write_rater,
)

BOOT = Boot(resamples=50)
SEEN: list[MetaInput] = []


def mean_where_people_say_faithful(inputs: MetaInput) -> MetaTables:
    """A researcher's table: per run, the mean of its ``mine/score`` over the summaries people
    labelled faithful, and over those they labelled unfaithful."""
    SEEN.append(inputs)
    label = {j.doc_id: j.faithful for j in inputs.judgments if isinstance(j, ClaimsJudgment)}
    rows = []
    for run in inputs.runs:
        texts = run.read_json("summaries.json") or {}
        scored = {d: v["mine/score"] for d, v in run.values.items() if "mine/score" in v}
        if not scored:
            continue
        ok = [v for d, v in scored.items() if label.get(d) is True and d in texts]
        bad = [v for d, v in scored.items() if label.get(d) is False and d in texts]
        rows.append((run.run_id[:8], sum(ok) / len(ok), sum(bad) / len(bad)))
    table = MetaTable(
        "meta_mine", "Mine against people", ("run", "faithful", "unfaithful"), tuple(rows), "."
    )
    return MetaTables((table,), ("mine: a note of the researcher's",))


def metric(hook: Any) -> types.ModuleType:
    """A metric module as a researcher writes one, with the hook."""
    module = types.ModuleType("mine")
    module.ROLES = ()  # type: ignore[attr-defined]
    module.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    module.setup = lambda: None  # type: ignore[attr-defined]
    module.meta_tables = hook  # type: ignore[attr-defined]
    return module


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    tmp = tmp_path_factory.mktemp("hooks")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    record_human_run(uri, "faith", people(), "people.json")  # write_rater's experiment
    values = {f"s{i}": float(i) for i in range(1, 11)}  # s1-s4 faithful, s5-s10 not (PEOPLE)
    run_id = write_rater(uri, values, {"metrics.faithfulness.method": "binary"})
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    scores = {d: {"faithfulness/faithful": 1.0, "mine/score": v} for d, v in values.items()}
    client.log_dict(run_id, scores, "scores.json")  # the rater run also scored by "mine"
    return uri, tmp


def test_an_installed_metrics_table_is_in_the_report_beside_faithfulness(
    store: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, tmp = store
    register(monkeypatch, "metrics", "mine", metric(mean_where_people_say_faithful))
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    (out / "meta_gone.csv").write_text("a table of an earlier report\n", encoding="utf-8")
    SEEN.clear()
    report = make_report(
        ReportConfig(uri=uri, experiment="faith", out=out, resamples=50, meta=True)
    )
    assert not (out / "meta_gone.csv").exists()  # a table not made now does not survive
    with (out / "meta_mine.csv").open(encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["faithful"]) == pytest.approx((1 + 2 + 3 + 4) / 4)
    assert float(row["unfaithful"]) == pytest.approx((5 + 6 + 7 + 8 + 9 + 10) / 6)
    assert (
        "## Mine against people" in report.meta
        and "mine: a note of the researcher's" in report.meta
    )
    assert (out / "meta_faithfulness.csv").exists()  # the built-in's tables are still there
    (given,) = SEEN
    assert len(given.judgments) == 10 and [r.run_id[:8] for r in given.runs] == [row["run"]]
    assert given.runs[0].read_json("summaries.json")["s1"] == summary_of("s1")
    assert given.runs[0].read_text("absent.json") is None


def inputs() -> MetaInputs:
    return MetaInputs((), tuple(people()), {}, {}, ())


def table(name: str, rows: tuple[tuple[Any, ...], ...] = ((1,),)) -> MetaTable:
    return MetaTable(name, "t", ("n",), rows, "c")


@pytest.mark.parametrize(
    ("made", "line"),
    [
        (
            {"tables": []},
            "metrics=mine's meta_tables returned dict, not runner.api.meta.MetaTables",
        ),
        (MetaTables(("x",)), "returned a table of type str, not MetaTable"),  # type: ignore[arg-type]
        (MetaTables((table("Summary"),)), "named a table 'Summary': a name is meta_ and"),
        (MetaTables((table("meta_x", ((1, 2),)),)), "table meta_x with a row whose length"),
        (MetaTables((table("meta_faithfulness_systems"),)), "as metrics=faithfulness does"),
        (MetaTables((table("meta_summaries"),)), "named meta_summaries, as the report does"),
        (MetaTables((), (3,)), "returned a note that is not text"),  # type: ignore[arg-type]
    ],
)
def test_a_hook_that_breaks_the_contract_is_one_line_naming_the_metric(
    made: object, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(monkeypatch, "metrics", "mine", metric(lambda _: made))
    judged = [*people(), claims_judgment("c1", "GPT-4", ("supported",))]  # a systems table
    with pytest.raises(DataError, match=r"^metrics=mine's meta_tables ") as raised:
        plugin_tables(
            "sqlite:///unused.db",
            [],
            MetaInputs((), tuple(judged), {}, {}, ()),
            BOOT,
            ["meta_summaries"],
        )
    assert line in str(raised.value) and "\n" not in str(raised.value)


def test_a_hook_that_raises_is_named_with_what_it_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch, "metrics", "mine", metric(lambda _: math.log(0)))
    with pytest.raises(DataError, match=r"metrics=mine's meta_tables failed \(ValueError: math"):
        plugin_tables("sqlite:///unused.db", [], inputs(), BOOT, [])


def test_meta_tables_that_is_not_a_function_is_refused_on_load() -> None:
    module = metric("meta_mine")
    assert check_contract("metrics", module) == (
        "meta_tables is not a function (it is optional: remove it or define it)"
    )


def test_a_metric_that_cannot_be_imported_is_a_note_not_a_silent_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = types.ModuleType("broken")  # no ROLES, PROMPT_DIRS, setup: refused on load
    register(monkeypatch, "metrics", "broken", broken)
    tables, notes = plugin_tables("sqlite:///unused.db", [], inputs(), BOOT, [])
    (line,) = [n for n in notes if n.startswith("metrics=broken ")]
    assert "could not be imported, so no meta table of its" in line and "missing ROLES" in line


def test_a_hooks_own_one_line_error_reaches_the_user_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuses(_: MetaInput) -> MetaTables:
        raise DataError("mine: people's ratings need a 'clarity' column; add it")

    register(monkeypatch, "metrics", "mine", metric(refuses))
    with pytest.raises(DataError, match=r"^mine: people's ratings need a 'clarity' column"):
        plugin_tables("sqlite:///unused.db", [], inputs(), BOOT, [])


def test_with_no_hook_installed_nothing_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.report.meta import hooks

    monkeypatch.setattr(hooks, "available", lambda kind: {})
    assert plugin_tables("sqlite:///never-opened.db", [], inputs(), BOOT, []) == ([], [])


def test_an_artifact_that_is_not_json_names_the_run_and_the_file() -> None:
    run = RunView("a" * 32, 1, {}, {}, lambda name: "{not json" if name == "x.json" else None)
    assert run.read_json("absent.json") is None
    with pytest.raises(ValueError, match=r"run a{32}'s artifact x.json is not JSON"):
        run.read_json("x.json")
