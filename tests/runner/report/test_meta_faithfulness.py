"""The faithfulness metric's meta tables (metrics/faithfulness/meta.py) on hand-made values.

People's labels are ``ClaimsJudgment`` values and the raters ``RaterRun`` values written
here; every expected figure is computed in the test from the confusion counts by the
textbook formulas (or by hand), never by the module's own helpers.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from metrics.faithfulness.meta import (
    RaterRun,
    claim_table,
    faithfulness_table,
    faithfulness_tables,
    method_of,
    summarizer_table,
)
from runner.api import meta as st
from runner.api.human_format import ClaimLabel, ClaimsJudgment
from runner.api.meta import Boot, MetaTable, RunView
from runner.human.record import record_human_run
from runner.report.config import ReportConfig
from runner.report.make import make_report
from runner.tracking.writer import Tracker

BOOT = Boot(resamples=200)

# people's labels: doc -> (faithful, difficulty); the rater's: doc -> 1.0 / 0.0 / NaN
PEOPLE = {
    "s1": (True, ""),
    "s2": (True, ""),
    "s3": (True, ""),
    "s4": (True, ""),
    "s5": (False, "easy"),
    "s6": (False, "easy"),
    "s7": (False, "hard"),
    "s8": (False, "hard"),
    "s9": (False, "hard"),
    "s10": (False, "hard"),
}
RATER = {
    "s1": 1.0,
    "s2": 1.0,
    "s3": 1.0,
    "s4": 0.0,
    "s5": 0.0,
    "s6": 1.0,
    "s7": 1.0,
    "s8": 1.0,
    "s9": 0.0,
    "s10": 1.0,
    "s11": math.nan,  # undecided and unlabelled by people: in no figure
}


def summary_of(doc: str) -> str:
    return f"The story {doc} happens.  Then  it ends."


def people(labels: dict[str, tuple[bool, str]] = PEOPLE) -> list[ClaimsJudgment]:
    return [
        ClaimsJudgment(doc, "gpt-4", "people", summary_of(doc), faithful, difficulty)
        for doc, (faithful, difficulty) in labels.items()
    ]


def rater(
    values: dict[str, float],
    *,
    run_id: str = "a" * 32,
    start: int = 1,
    method: str = "binary",
    texts: dict[str, str] | None = None,
    claims: dict[str, list[dict[str, object]]] | None = None,
) -> RaterRun:
    summaries = {doc: " ".join(summary_of(doc).split()) for doc in values}  # other whitespace
    summaries |= texts or {}
    return RaterRun(
        run_id, start, "faithfulness", method, "openai/gpt-4o", summaries, values, claims or {}
    )


def row_of(table: MetaTable | None, method: str) -> dict[str, object]:
    assert table is not None
    rows = [dict(zip(table.header, r, strict=True)) for r in table.rows]
    return next(r for r in rows if r["method"] == method)


def value(cell: object) -> float:
    assert isinstance(cell, st.Stat)
    return cell.value


def test_summary_figures_match_the_textbook_formulas() -> None:
    table, notes = faithfulness_table(people(), [rater(RATER)], BOOT)
    row = row_of(table, "binary")
    # faithful positive: tp = s1-s3, fn = s4, fp = s6 s7 s8 s10, tn = s5 s9
    tp, fn, fp, tn, n = 3, 1, 4, 2, 10
    observed = (tp + tn) / n
    chance = ((tp + fp) / n) * ((tp + fn) / n) + ((fn + tn) / n) * ((fp + tn) / n)
    assert row["summaries"] == 10  # s11 has no people's label
    assert value(row["Cohen's kappa"]) == pytest.approx((observed - chance) / (1 - chance))
    assert value(row["% faithful"]) == pytest.approx(70.0)
    assert value(row["precision"]) == pytest.approx(3 / 7)
    assert value(row["recall"]) == pytest.approx(3 / 4)
    assert value(row["% easy caught"]) == pytest.approx(50.0)  # s5 of s5, s6
    assert value(row["% hard caught"]) == pytest.approx(25.0)  # s9 of s7-s10
    assert value(row["balanced accuracy %"]) == pytest.approx(100 * (3 / 4 + 2 / 6) / 2)
    stat = row["Cohen's kappa"]
    assert isinstance(stat, st.Stat) and stat.low <= stat.value <= stat.high
    assert not notes


def test_undecided_summaries_are_left_out_with_a_note() -> None:
    values = {**RATER, "s9": math.nan}
    table, notes = faithfulness_table(people(), [rater(values)], BOOT)
    row = row_of(table, "binary")
    assert row["summaries"] == 9
    assert value(row["% hard caught"]) == pytest.approx(0.0)  # s9 was the one caught
    assert any("1 of 10 labelled summaries undecided" in n for n in notes)


def test_summaries_match_by_document_and_text_not_by_run() -> None:
    changed = {"s1": "A different summary of s1."}
    table, notes = faithfulness_table(people(), [rater(RATER, texts=changed)], BOOT)
    assert row_of(table, "binary")["summaries"] == 9  # s1's text differs: not the same summary
    name = f"faithfulness (binary, openai/gpt-4o; run {'a' * 8})"
    assert notes == [  # never silently: the label left out is named, and why
        f"faithfulness: {name}: 1 of 10 labelled summaries left out, their text differs from "
        "the summary the rater judged ('s1')"
    ]


def test_labels_of_documents_the_rater_never_saw_are_named() -> None:
    fewer = {doc: v for doc, v in RATER.items() if doc not in ("s2", "s3")}
    table, notes = faithfulness_table(people(), [rater(fewer)], BOOT)
    assert row_of(table, "binary")["summaries"] == 8
    (line,) = notes
    assert line.endswith(
        "2 of 10 labelled summaries left out, the rater's runs have no summary of their "
        "document ('s2', 's3')"
    )


def test_one_row_per_configuration_newest_run_wins() -> None:
    old = rater({d: 0.0 for d in RATER}, run_id="b" * 32, start=1)
    new = rater(RATER, run_id="c" * 32, start=2)
    other = rater({d: 1.0 for d in PEOPLE}, run_id="d" * 32, method="cot")
    table, _ = faithfulness_table(people(), [old, new, other], BOOT)
    assert table is not None and len(table.rows) == 2
    assert value(row_of(table, "binary")["% faithful"]) == pytest.approx(70.0)  # the newer run
    cot = row_of(table, "cot")
    assert value(cot["% faithful"]) == pytest.approx(100.0)
    # one answer only: observed agreement = chance agreement = 0.4, so kappa 0
    assert value(cot["Cohen's kappa"]) == pytest.approx(0.0)
    assert value(cot["balanced accuracy %"]) == pytest.approx(50.0)


def test_annotators_majority_and_ties() -> None:
    judgments = people() + [
        ClaimsJudgment("s1", "gpt-4", "p2", summary_of("s1"), False),  # s1: 1 yes 1 no, a tie
        ClaimsJudgment("s4", "gpt-4", "p2", summary_of("s4"), False),
        ClaimsJudgment("s4", "gpt-4", "p3", summary_of("s4"), False),  # s4: majority unfaithful
    ]
    table, notes = faithfulness_table(judgments, [rater(RATER)], BOOT)
    row = row_of(table, "binary")
    assert row["summaries"] == 9
    # s4 now unfaithful (rater 0: caught, no difficulty); tp s2 s3, fp s6 s7 s8 s10, tn s4 s5 s9
    assert value(row["precision"]) == pytest.approx(2 / 6)
    assert value(row["recall"]) == pytest.approx(1.0)
    assert "1 summaries whose annotators tied" in " ".join(notes)


def test_a_rater_without_peoples_labels_is_one_line() -> None:
    lone = rater({"x1": 1.0, "x2": 0.0})
    tables, notes = faithfulness_tables(people(), [lone], BOOT)
    assert [t.name for t in tables] == []
    assert len(notes) == 1 and "has faithful values for 2 summaries but no people's" in notes[0]
    tables, notes = faithfulness_tables([], [lone], BOOT)
    assert tables == [] and len(notes) == 1 and "no people's labels" in notes[0]


def test_nothing_without_raters_or_claims_judgments() -> None:
    assert faithfulness_tables([], [], BOOT) == ([], [])


# --- claim level ------------------------------------------------------------------------

CLAIMS = ("Anna leaves.", "Bob comes.", "Paris is far.", "It rains.", "The end.")


def claims_judgment(doc: str, system: str, labels: tuple[str, ...]) -> ClaimsJudgment:
    return ClaimsJudgment(
        doc,
        system,
        "people",
        summary_of(doc),
        claims=tuple(ClaimLabel(i, CLAIMS[i], label) for i, label in enumerate(labels)),
    )


def answers(
    supported: tuple[bool | None, ...], texts: tuple[str, ...] = CLAIMS
) -> list[dict[str, object]]:
    return [{"index": i, "claim": texts[i], "supported": s} for i, s in enumerate(supported)]


def test_claim_level_reads_labels_as_fables_does() -> None:
    judged = [
        claims_judgment(
            "c1", "GPT-4", ("supported", "partial", "unsupported", "cannot_tell", "supported")
        ),
        claims_judgment("c2", "GPT-4", ("supported", "supported", "unsupported")),
    ]
    run = rater(
        {"c1": 0.0, "c2": 1.0},
        claims={
            # c1: supported->T (tp), partial->T (fp), unsupported->F (tn), cannot_tell left
            # out, supported->None left out
            "c1": answers((True, True, False, True, None)),
            # c2: index 1's text differs (left out, a note), supported->F (fn), unsupported->T
            "c2": answers((False, True, True), ("Anna leaves.", "Bob goes.", "Paris is far.")),
        },
    )
    table, notes = claim_table(judged, [run], BOOT)
    row = row_of(table, "binary")
    tp, fp, fn, tn = 1, 2, 1, 1
    n = tp + fp + fn + tn
    assert (row["summaries"], row["claims"]) == (2, n)
    observed = (tp + tn) / n
    chance = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n**2
    assert value(row["Cohen's kappa"]) == pytest.approx((observed - chance) / (1 - chance))
    assert value(row["% supported"]) == pytest.approx(100 * 3 / 5)
    assert value(row["precision"]) == pytest.approx(1 / 3)
    assert value(row["recall"]) == pytest.approx(1 / 2)
    assert value(row["balanced accuracy %"]) == pytest.approx(100 * (1 / 2 + 1 / 3) / 2)
    assert any("1 claims whose text differs" in n for n in notes)


def test_per_summarizer_shares_of_all_claims() -> None:
    judged = [
        claims_judgment("c1", "GPT-4", ("supported", "partial", "unsupported", "cannot_tell")),
        claims_judgment("c2", "GPT-4", ("supported", "supported")),
        claims_judgment(
            "c3", "MIXTRAL", ("unsupported", "supported", "supported", "supported", "partial")
        ),
    ]
    table = summarizer_table(judged, BOOT)
    assert table is not None
    rows = {r[0]: dict(zip(table.header, r, strict=True)) for r in table.rows}
    assert (rows["GPT-4"]["summaries"], rows["GPT-4"]["claims"]) == (2, 6)
    assert value(rows["GPT-4"]["% supported"]) == pytest.approx(100 * 3 / 6)
    assert value(rows["GPT-4"]["% cannot_tell"]) == pytest.approx(100 * 1 / 6)
    assert value(rows["MIXTRAL"]["% supported"]) == pytest.approx(60.0)
    assert value(rows["MIXTRAL"]["% partial"]) == pytest.approx(20.0)


def test_method_from_params_else_resolved_config_else_file() -> None:
    def run(params: dict[str, str]) -> RunView:
        return RunView("r" * 32, 1, params, {}, lambda name: None)

    assert method_of(run({"metrics.faithfulness.method": "cot"}), "faithfulness", None) == "cot"
    resolved = {"metrics": {"faithfulness": {"method": "claims"}}}
    assert method_of(run({}), "faithfulness", resolved) == "claims"
    path = str(Path("/data/predicted_labels/mixtral/cot.json"))
    assert method_of(run({"metrics.given.path": path}), "given", None) == "mixtral/cot.json"
    assert method_of(run({"metrics.given.rater": "mine"}), "given", None) == "mine"


# --- through the store and python -m runner.report ------------------------------------


def write_rater(
    uri: str,
    values: dict[str, float],
    params: dict[str, str],
    *,
    supported: dict[str, float] | None = None,
    claims: dict[str, list[dict[str, object]]] | None = None,
    config: str = "",
) -> str:
    """A judged run as a faithfulness job writes it: scores.json, summaries.json, claims."""
    tracker = Tracker(uri, "faith")
    run_id = tracker.start("rater", {})
    tracker.log_params({"strategy": "none", **params})
    scores = {d: {"faithfulness/faithful": v, "stats/words": 9.0} for d, v in values.items()}
    for doc, share in (supported or {}).items():
        scores[doc]["faithfulness/supported"] = share
    tracker.log_json(scores, "scores.json")
    tracker.log_json({d: summary_of(d) for d in values}, "summaries.json")
    if claims:
        tracker.log_json(claims, "claims.json")
    if config:
        tracker.log_text(config, "config.yaml")
    tracker.finish("FINISHED")
    return run_id


@pytest.fixture(scope="module")
def store_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    tmp = tmp_path_factory.mktemp("faith")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    judged = [*people(), claims_judgment("c1", "GPT-4", ("supported", "partial", "supported"))]
    record_human_run(uri, "faith", judged, "people.json")
    binary = {"metrics.faithfulness.method": "binary", "judge.model": "openai/gpt-4o"}
    write_rater(uri, RATER, binary)
    write_rater(  # method only in config.yaml (a default is not a param)
        uri,
        {"c1": 1.0},
        {"judge.model": "openai/gpt-4o"},
        supported={"c1": 2 / 3},
        claims={"c1": answers((True, False, True))},
        config="metrics:\n  faithfulness:\n    method: claims\n",
    )
    write_rater(uri, {"x1": 1.0}, {"metrics.faithfulness.method": "cot"})
    config = ReportConfig(uri=uri, experiment="faith", out=tmp / "out", resamples=100, meta=True)
    return make_report(config), tmp / "out"


def test_report_writes_the_faithfulness_sections(store_report: tuple[Any, Path]) -> None:
    report, out = store_report
    assert "## Faithfulness: summaries" in report.meta
    assert "| faithfulness | binary | openai/gpt-4o | 10 | " in report.meta
    assert "## Faithfulness: claims" in report.meta
    assert "| faithfulness | claims | openai/gpt-4o | 1 | 3 | " in report.meta
    assert "## Faithfulness per summarizer (people)" in report.meta
    # the cot run judged x1 only, which no person labelled: one line, no row
    lines = [x for x in report.meta.splitlines() if "(cot, —; run" in x]
    assert len(lines) == 1 and "but no people's summary labels" in lines[0]
    assert "no meta_sentences table" not in report.meta  # claims judgments only: no such notes
    tex = (out / "meta.tex").read_text(encoding="utf-8")
    assert "Faithfulness: summaries" in tex and "Faithfulness: claims" in tex
    with (out / "meta_faithfulness.csv").open(encoding="utf-8") as f:
        rows = {r["method"]: r for r in csv.DictReader(f)}
    assert float(rows["binary"]["precision"]) == pytest.approx(3 / 7)
    assert float(rows["binary"]["% faithful"]) == pytest.approx(70.0)
    with (out / "meta_faithfulness_claims.csv").open(encoding="utf-8") as f:
        (claims,) = list(csv.DictReader(f))
    # c1: supported->T tp, partial->F (unfaithful) tn, supported->T tp: precision 1, recall 1
    assert (float(claims["precision"]), float(claims["recall"])) == (1.0, 1.0)
    assert float(claims["% supported"]) == pytest.approx(200 / 3)


def test_coherence_only_meta_has_nothing_of_faithfulness() -> None:
    from runner.api.human_format import CoherenceAnnotation
    from runner.report.meta.format import markdown
    from runner.report.meta.hooks import plugin_tables
    from runner.report.meta.make import build_tables
    from runner.report.meta.read import MetaInputs

    annotation = CoherenceAnnotation("d1", "hier", "a1", "Anna left. Bob came.")
    inputs = MetaInputs((), (annotation,), {}, {}, ())
    declared = plugin_tables("sqlite:///unused.db", [], inputs, BOOT, reserved=())  # every hook
    tables, notes = build_tables(inputs, ("booookscore/score",), BOOT, declared)
    text = markdown(tables, notes)
    assert "aithful" not in text and "no meta_sentences table" in text


def test_a_panel_run_gives_a_row_per_member_and_one_for_the_panel() -> None:
    from metrics.faithfulness.meta import judge_of, read_raters
    from runner.report.meta.hooks import panel_views

    other = {d: (1.0 - v if d in ("s5", "s6") else v) for d, v in RATER.items()}  # catches s6
    pooled = {d: max(RATER[d], other[d]) for d in RATER}  # what the job recorded for the panel
    values = {
        d: {
            "faithfulness/faithful": pooled[d],
            "faithfulness:a/faithful": RATER[d],
            "faithfulness:b/faithful": other[d],
        }
        for d in RATER
    }
    texts = {"summaries.json": json.dumps({d: summary_of(d) for d in RATER}), "claims.json": "{}"}
    params = {
        "judges": "a,b",
        "judge:a.model": "openai/a",
        "judge:b.model": "openai/b",
        "metrics.faithfulness.method": "binary",
    }
    run = RunView("p" * 32, 5, params, values, texts.get)
    views = panel_views(run)
    assert [judge_of(v) for v in views] == [
        "panel(a,b): openai/a, openai/b", "a: openai/a", "b: openai/b"
    ]  # fmt: skip
    assert all(v.read_text("claims.json") is None for v in views)  # the first member's alone
    table, _ = faithfulness_table(people(), read_raters(views), BOOT)
    assert table is not None
    rows = {r[2]: dict(zip(table.header, r, strict=True)) for r in table.rows}
    alone = row_of(faithfulness_table(people(), [rater(RATER)], BOOT)[0], "binary")
    assert value(rows["a: openai/a"]["precision"]) == value(alone["precision"])  # a = RATER
    assert value(rows["b: openai/b"]["% easy caught"]) == pytest.approx(50.0)  # s6 of s5, s6
    assert value(rows["panel(a,b): openai/a, openai/b"]["% faithful"]) == pytest.approx(
        100 * sum(pooled[d] for d in PEOPLE) / len(PEOPLE)
    )


def test_judges_of_one_model_name_keep_a_row_each_never_merged() -> None:
    """Three panel members served under one model name, and a sampled judge of that model:
    five raters, five rows (they were one 'openai/stub' row, the newest run's values)."""
    from metrics.faithfulness.meta import read_raters
    from runner.report.meta.hooks import panel_views

    flips = {"a": (), "b": ("s5",), "c": ("s5", "s6")}
    member = {m: {d: 1.0 - v if d in f else v for d, v in RATER.items()} for m, f in flips.items()}
    texts = {"summaries.json": json.dumps({d: summary_of(d) for d in RATER})}
    panel_params = {"judges": "a,b,c", "metrics.faithfulness.method": "binary"}
    for m in member:
        panel_params |= {f"judge:{m}.model": "openai/stub", f"judge:{m}.temperature": "0.0"}
    values = {
        d: {"faithfulness/faithful": RATER[d]}
        | {f"faithfulness:{m}/faithful": member[m][d] for m in member}
        for d in RATER
    }
    panel = RunView("p" * 32, 5, panel_params, values, texts.get)
    sampled = {d: {"faithfulness/faithful": member["c"][d]} for d in RATER}
    single = {
        "judge": "stub", "judge.model": "openai/stub", "judge.temperature": "0.7",
        "judge.samples": "3", "metrics.faithfulness.method": "binary",
    }  # fmt: skip
    alone = RunView("s" * 32, 9, single, sampled, texts.get)  # the newest run
    table, _ = faithfulness_table(people(), read_raters([*panel_views(panel), alone]), BOOT)
    assert table is not None
    judges = [r[2] for r in table.rows]
    assert sorted(judges) == sorted([
        "panel(a,b,c): openai/stub, openai/stub, openai/stub, temperature 0.0",
        "a: openai/stub, temperature 0.0",
        "b: openai/stub, temperature 0.0",
        "c: openai/stub, temperature 0.0",
        "stub: openai/stub, temperature 0.7, 3 samples",
    ])  # fmt: skip
    rows = {r[2]: dict(zip(table.header, r, strict=True)) for r in table.rows}
    figures = {j: [str(v) for k, v in rows[j].items() if k != "judge"] for j in judges}
    assert figures["a: openai/stub, temperature 0.0"] != figures["c: openai/stub, temperature 0.0"]


def test_ppi_true_anchors_the_rater_on_the_labelled_summaries(tmp_path: Path) -> None:
    from runner.api.meta import anchored_mean

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    labelled = {d: PEOPLE[d] for d in ("s1", "s2", "s4", "s5", "s7", "s9")}
    record_human_run(uri, "faith", people(labelled), "people.json")
    write_rater(uri, RATER, {"metrics.faithfulness.method": "binary", "judge.model": "m"})
    config = ReportConfig(
        uri=uri, experiment="faith", out=tmp_path / "out", resamples=100, ppi=True
    )
    make_report(config)
    with (tmp_path / "out" / "meta_ppi_faithfulness.csv").open(encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    decided = [d for d, v in RATER.items() if not math.isnan(v)]
    expected = anchored_mean(
        [1.0 if labelled[d][0] else 0.0 for d in labelled],
        [RATER[d] for d in labelled],
        [RATER[d] for d in decided if d not in labelled],
        0.95,
    )
    assert (row["people's labels"], row["judged"]) == ("6", "10")
    assert float(row["% faithful (PPI++)"]) == pytest.approx(100 * expected.ppi.value, abs=0.05)
    assert float(row["% faithful (judge only)"]) == pytest.approx(70.0)


def test_ppi_true_with_no_labelled_summary_judged_is_one_line(tmp_path: Path) -> None:
    from runner.api.errors import DataError

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    record_human_run(uri, "faith", people({"s1": (True, "")}), "people.json")
    write_rater(uri, {"x1": 1.0, "x2": 0.0}, {"metrics.faithfulness.method": "binary"})
    config = ReportConfig(
        uri=uri, experiment="faith", out=tmp_path / "out", resamples=100, ppi=True
    )
    with pytest.raises(DataError) as raised:
        make_report(config)
    message = str(raised.value)
    assert message.startswith("ppi=true: no value has people's labels and a judge's")
    assert "PPI needs two or more documents" in message and "\n" not in message
    assert len(message) < 400  # one reason, the others counted (was 1,097 characters)
