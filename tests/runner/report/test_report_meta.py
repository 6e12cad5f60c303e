"""The meta-evaluation report (runner.report.meta_*): statistics against independent
computations (scipy, a worked kappa), the tables of a store written here with the Tracker
against hand-computed figures, and the released BooookScore human data (Table 4, Appendix J).

The store holds two judged runs (hier and inc, judged by two judges) with the artifacts a
BooookScore job writes (``scores.json``, ``annotations.json``: doc -> sentence -> answer) and
one human run written by ``runner.human.record.record_human_run`` (tag runner.kind=human,
``human/judgments.jsonl``; issue 23, contract 2).
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from runner.api import meta as st
from runner.api.errors import DataError
from runner.api.meta import Boot, MetaTable, run_label
from runner.human.authors import read_author_annotations, read_summaries, read_validation_sample
from runner.human.judgments import (
    CRITERIA,
    CoherenceAnnotation,
    Judgment,
    Preference,
    Relation,
    Span,
    Verdict,
)
from runner.human.labelstudio import read_labelstudio
from runner.human.record import record_human_run
from runner.report.config import ReportConfig
from runner.report.make import make_report
from runner.report.meta.hooks import plugin_tables
from runner.report.meta.make import build_tables
from runner.report.meta.read import MetaInputs
from runner.tracking.writer import Tracker
from tests.conftest import SHARED_DATA, missing_shared

HUMAN_DATA = SHARED_DATA / "booookscore" / "human"
S = {  # summaries: (run, doc) -> text (Punkt: four sentences each)
    ("hier", "d1"): "Anna left home. She met Bob. They went to Paris. The end came.",
    ("hier", "d2"): "Tom woke up. He ate bread. Then he slept. Morning came again.",
    ("hier", "d3"): "Rain fell. Roads flooded. People stayed in. Nobody complained.",
    ("inc", "d1"): "Anna left. Bob came. Paris was far. It ended.",
    ("inc", "d2"): "Tom woke. He ate. He slept. Day came.",
}
FLAG = {"questions": "Who?", "types": None}  # types filled per sentence below
CLEAN = {"questions": None, "types": None}
JUDGE = {  # (run, doc) -> the judge's answer per sentence index (absent: clean)
    ("hier", "d1"): {1: ["entity omission"], 2: ["discontinuity"]},
    ("hier", "d2"): {0: ["salience"]},
    ("hier", "d3"): {3: "unparsed"},
    ("inc", "d1"): {},
    ("inc", "d2"): {0: ["language"]},
}
SCORES = {  # per-document values in scores.json (independent of the flags on purpose)
    "hier": {"d1": (50.0, 120.0), "d2": (80.0, 80.0), "d3": (100.0, 95.0)},
    "inc": {"d1": (100.0, 120.0), "d2": (75.0, 60.0)},
}
HUMAN_SCORE = {("hier", "d1"): 50.0, ("hier", "d2"): 75.0, ("hier", "d3"): 100.0}
HUMAN_SCORE |= {("inc", "d1"): 100.0, ("inc", "d2"): 75.0}


def _answers(run: str, doc: str) -> dict[str, Any]:
    sentences = S[(run, doc)].split(". ")
    sentences = [s if s.endswith(".") else s + "." for s in sentences]
    out: dict[str, Any] = {}
    for i, sentence in enumerate(sentences):
        said = JUDGE[(run, doc)].get(i)
        if said == "unparsed":
            out[sentence] = {"questions": None, "types": None, "unparsed": True, "error": "x"}
        else:
            out[sentence] = {**FLAG, "types": said} if said else CLEAN
    return out


def _judgments(ids: dict[str, str]) -> list[Judgment]:
    hier, inc = ids["hier"], ids["inc"]
    coherence = [
        CoherenceAnnotation(
            "d1",
            hier,
            "a1",
            S[("hier", "d1")],
            singles=(Span("She met Bob.", "Who is Bob?", ("entity omission",)),),
            relations=(
                Relation(
                    Span("They went to Paris."), Span("The end came."), "", ("discontinuity",)
                ),
            ),
        ),
        CoherenceAnnotation(  # one span over two sentences, with other whitespace
            "d2",
            hier,
            "a1",
            S[("hier", "d2")],
            singles=(Span("He ate bread.\nThen  he slept.", "", ("salience",)),),
        ),
        CoherenceAnnotation("d3", hier, "a1", S[("hier", "d3")]),
        CoherenceAnnotation("d1", inc, "a1", S[("inc", "d1")]),
        CoherenceAnnotation(
            "d2", inc, "a1", S[("inc", "d2")], singles=(Span("He slept.", "", ("language",)),)
        ),
    ]

    def pref(
        doc: str, order: tuple[str, str], annotator: str, choices: list[str], flags: list[bool]
    ) -> Preference:
        names = {"hier": hier, "inc": inc, "draw": "draw"}
        chosen = dict(
            zip(
                ("detail", "structure", "logic", "preference"),
                (names[c] for c in choices),
                strict=True,
            )
        )
        keys = ("contradiction", f"omission:{hier}", f"omission:{inc}")
        return Preference(
            doc,
            (names[order[0]], names[order[1]]),
            annotator,
            chosen,
            dict(zip(keys, flags, strict=True)),
        )

    preferences = [
        pref("d1", ("hier", "inc"), "a1", ["inc", "hier", "hier", "hier"], [False, True, False]),
        pref("d2", ("inc", "hier"), "a1", ["inc", "draw", "hier", "inc"], [True, True, True]),
        pref("d1", ("hier", "inc"), "a2", ["inc", "hier", "draw", "hier"], [False, False, False]),
    ]
    verdicts = [
        Verdict("d1", "human", {"span": "x"}, v)
        for v in ("Agree", "Partially agree", "Don't agree")
    ]
    verdicts += [Verdict("d2", "human", {"span": "y"}, "Agree")]
    verdicts += [Verdict("d1", "model", {"span": "z"}, v) for v in ("Don't agree", "Agree")]
    return [*coherence, *preferences, *verdicts]


def _write_store(uri: str, experiment: str, human: bool = True) -> dict[str, str]:
    """The two judged runs and (``human``) the human run; run name -> id."""
    ids: dict[str, str] = {}
    for run, judge in (("hier", "openai/gpt-4o"), ("inc", "anthropic/claude-3")):
        tracker = Tracker(uri, experiment)
        ids[run] = tracker.start(run, {})
        tracker.log_params({"strategy": run, "judge": judge.split("/")[0], "judge.model": judge})
        scores = {
            doc: {"booookscore/score": v[0], "stats/length_tokens": v[1]}
            for doc, v in SCORES[run].items()
        }
        tracker.log_json(scores, "scores.json")
        tracker.log_json({doc: _answers(run, doc) for doc in SCORES[run]}, "annotations.json")
        tracker.log_metrics(
            {"booookscore/score": float(np.mean([v[0] for v in SCORES[run].values()]))}
        )
        tracker.finish("FINISHED")
    if human:  # the human run as W-MLFLOW's writer makes it (issue 23, contract 2)
        ids["human"] = record_human_run(uri, experiment, _judgments(ids), "people.json").run_id
    return ids


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, str], Path]:
    """A report of the store with the human run (meta unset: made because a human run exists)."""
    tmp = tmp_path_factory.mktemp("meta")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    ids = _write_store(uri, "meta")
    config = ReportConfig(uri=uri, experiment="meta", out=tmp / "out", resamples=200)
    return make_report(config), ids, tmp / "out"


def _rows(out: Path, name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((out / f"{name}.csv").read_text())))


# --- statistics against independent computations -------------------------------------


def test_kappa_of_a_worked_example() -> None:
    # Wikipedia's Cohen's kappa example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> 0.4.
    assert st.kappa(st.Confusion(tp=20, fp=5, fn=10, tn=15)) == pytest.approx(0.4)
    assert math.isnan(st.kappa(st.Confusion(0, 0, 0, 7)))  # one answer to everything


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0]),
        ([50.0, 75.0, 100.0, 100.0, 75.0], [50.0, 80.0, 100.0, 100.0, 75.0]),  # ties on both
        ([3.0, 1.0, 2.0, 2.0, 9.0, 4.0], [1.0, 1.0, 1.0, 5.0, 2.0, 0.5]),
    ],
)
def test_tau_and_r_match_scipy(x: list[float], y: list[float]) -> None:
    assert st.kendall_tau(x, y) == pytest.approx(scipy_stats.kendalltau(x, y).statistic)
    assert st.pearson_r(x, y) == pytest.approx(scipy_stats.pearsonr(x, y).statistic)
    assert math.isnan(st.kendall_tau(x, [1.0] * len(x)))
    assert math.isnan(st.pearson_r(x, [1.0] * len(x)))


def test_precision_recall_f1() -> None:
    c = st.Confusion(tp=2, fp=1, fn=3, tn=5)
    assert (st.precision(c), st.recall(c), st.f1(c)) == pytest.approx((2 / 3, 0.4, 0.5))


def test_bootstrap_is_the_percentile_interval_of_resampled_pooled_counts() -> None:
    counts = np.array([[2, 0, 1, 1], [0, 1, 2, 1], [0, 0, 0, 3]], dtype=float)
    got = st.bootstrap(3, st.pooled(counts, st.recall), resamples=300, confidence=0.9, seed=4)
    rng = np.random.default_rng(4)
    draws = []
    for _ in range(300):
        tp, _fp, fn, _tn = counts[rng.integers(0, 3, size=3)].sum(axis=0)
        if tp + fn:
            draws.append(tp / (tp + fn))
    assert got.value == pytest.approx(2 / 5)
    assert (got.low, got.high) == pytest.approx(tuple(np.percentile(draws, [5, 95])))
    assert got.n == 3


# --- the report on a store written here --------------------------------------------------

SENTENCES = {  # judge -> error type -> (precision, recall, F1, kappa), computed by hand
    "openai/gpt-4o": {  # tp 2, fp 1, fn 3, tn 5 over 11 judged sentences (one unparsed)
        "any error": (2 / 3, 2 / 5, 1 / 2, 7 / 29),
        "entity omission": (1.0, 1.0, 1.0, 1.0),
        "salience": (0.0, 0.0, 0.0, -4 / 29),
        "discontinuity": (1.0, 0.5, 2 / 3, 18 / 29),
    },
    "anthropic/claude-3": {  # tp 0, fp 1, fn 1, tn 6
        "any error": (0.0, 0.0, 0.0, -1 / 7),
        "language": (0.0, 0.0, 0.0, -1 / 7),
    },
}


def test_sentence_level_table(reported: tuple[Any, dict[str, str], Path]) -> None:
    _, _, out = reported
    rows = _rows(out, "meta_sentences")
    got = {(r["judge"], r["error type"]): r for r in rows}
    assert set(got) == {(_identity(j), t) for j, types in SENTENCES.items() for t in types}
    for judge, types in SENTENCES.items():
        for kind, expected in types.items():
            row = got[(_identity(judge), kind)]
            values = [float(row[k]) for k in ("precision", "recall", "F1", "kappa")]
            assert values == pytest.approx(expected), (judge, kind)
            for k in ("precision", "recall", "F1", "kappa"):
                assert (
                    float(row[f"{k}_low"]) <= float(row[k]) + 1e-9 <= float(row[f"{k}_high"]) + 2e-9
                )
    assert got[("openai: openai/gpt-4o", "any error")]["summaries"] == "3"
    assert got[("openai: openai/gpt-4o", "any error")]["sentences"] == "11"


def _identity(model: str) -> str:
    """The judge column: the run's judge alias (the fixture's provider) and its model."""
    return f"{model.split('/')[0]}: {model}"


def test_summary_level_table(reported: tuple[Any, dict[str, str], Path]) -> None:
    _, _, out = reported
    rows = {r["metric"]: r for r in _rows(out, "meta_summaries")}
    keys = sorted(HUMAN_SCORE)  # the five summaries
    human = [HUMAN_SCORE[k] for k in keys]
    for metric, column in (("booookscore/score", 0), ("stats/length_tokens", 1)):
        values = [SCORES[run][doc][column] for run, doc in keys]
        row = rows[metric]
        assert row["human score"] == "BooookScore (human)"
        assert row["summaries"] == "5"
        assert float(row["Kendall's tau"]) == pytest.approx(
            scipy_stats.kendalltau(human, values).statistic
        )
        assert float(row["Pearson's r"]) == pytest.approx(
            scipy_stats.pearsonr(human, values).statistic
        )
    assert set(rows) == {"booookscore/score", "stats/length_tokens"}  # the others: no values


def test_precision_per_source(reported: tuple[Any, dict[str, str], Path]) -> None:
    _, _, out = reported
    rows = {r["source"]: r for r in _rows(out, "meta_precision")}
    assert float(rows["human"]["precision %"]) == pytest.approx(75.0)  # 3 of 4
    assert float(rows["model"]["precision %"]) == pytest.approx(50.0)  # 1 of 2
    assert (rows["human"]["documents"], rows["human"]["annotations"]) == ("2", "4")
    assert [rows["human"][v] for v in ("Agree", "Partially agree", "Don't agree")] == [
        "2",
        "1",
        "1",
    ]


def test_preference_table(reported: tuple[Any, dict[str, str], Path]) -> None:
    _, ids, out = reported
    rows = _rows(out, "meta_preferences")
    assert (
        {(r["system A"], r["system B"]) for r in rows}
        == {  # labelled by what differs
            (f"strategy=hier ({ids['hier'][:8]})", f"strategy=inc ({ids['inc'][:8]})")
        }
    )
    hier, inc = "% A", "% B"

    def shares(criterion: str, *columns: str) -> list[float | None]:
        row = next(r for r in rows if r["criterion"] == criterion)
        return [float(row[c]) if row[c] else None for c in columns]

    third = 100 / 3
    assert shares("detail", hier, inc, "% draw") == pytest.approx([0.0, 100.0, 0.0])
    assert shares("structure", hier, inc, "% draw") == pytest.approx([2 * third, 0.0, third])
    assert shares("logic", hier, inc, "% draw") == pytest.approx([2 * third, 0.0, third])
    assert shares("preference", hier, inc, "% draw") == pytest.approx([2 * third, third, 0.0])
    assert shares("contradiction", "% yes") == pytest.approx([third])
    assert shares("omission", hier, inc) == pytest.approx([2 * third, third])


def test_metric_ordering_table(reported: tuple[Any, dict[str, str], Path]) -> None:
    _, _, out = reported
    got = {(r["metric"], r["criterion"]): r for r in _rows(out, "meta_orderings")}
    fields = ("comparisons", "agree", "disagree", "metric tie", "human draw")
    expected = {  # hand-counted from the three comparisons (see _judgments and SCORES)
        ("booookscore/score", "detail"): ("3", "2", "1", "0", "0", 200 / 3),
        ("booookscore/score", "structure"): ("3", "0", "2", "0", "1", 0.0),
        ("booookscore/score", "logic"): ("3", "1", "1", "0", "1", 50.0),
        ("booookscore/score", "preference"): ("3", "0", "3", "0", "0", 0.0),
        ("stats/length_tokens", "detail"): ("3", "0", "1", "2", "0", 0.0),
    }
    for key, want in expected.items():
        assert tuple(got[key][f] for f in fields) == want[:5], key
        assert float(got[key]["% agree"]) == pytest.approx(want[5]), key


def test_report_prints_and_writes_meta(reported: tuple[Any, dict[str, str], Path]) -> None:
    report, _, out = reported
    for name in ("meta.md", "meta.tex", "meta_vs_human.png"):
        assert (out / name) in report.files
    assert "# Does a metric agree with people?" in report.text()
    assert "| openai: openai/gpt-4o | any error | 3 | 11 | 0.667 [" in report.meta
    assert "\\begin{tabular}" in (out / "meta.tex").read_text()
    assert "- sentence level: 1 sentences without a readable judge answer" in report.meta  # d3


def test_meta_switch(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _write_store(uri, "plain", human=False)
    config = ReportConfig(
        uri=uri, experiment="plain", out=tmp_path / "a", resamples=100, plots=False
    )
    assert make_report(config).meta == ""  # no human run: no meta tables
    assert not (tmp_path / "a" / "meta.md").exists()
    with pytest.raises(
        DataError, match="meta=true but experiment 'plain' has no FINISHED human run"
    ):
        make_report(ReportConfig(**{**config.__dict__, "meta": True}))
    _write_store(uri, "judged")
    off = ReportConfig(
        uri=uri, experiment="judged", out=tmp_path / "b", resamples=100, plots=False, meta=False
    )
    assert make_report(off).meta == ""
    assert not (tmp_path / "b" / "meta.md").exists()


def test_preferences_over_named_systems_alone_give_the_meta_tables(tmp_path: Path) -> None:
    """An experiment holding only a human run of preferences (no metric): no main table, but
    the meta part is written, not an error about missing metric keys."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    prefs = [
        Preference(
            f"book{i}", ("hier", "inc"), "a1", {c: "inc" if i < 3 else "hier" for c in CRITERIA}
        )
        for i in range(4)
    ]
    record_human_run(uri, "prefs", prefs, "export.json")
    config = ReportConfig(uri=uri, experiment="prefs", out=tmp_path / "out", resamples=100)
    report = make_report(config)
    assert report.table is None and "Pairwise preferences" in report.meta
    assert "| hier | inc | detail | 4 | 25.0" in report.meta
    assert (tmp_path / "out" / "meta_preferences.csv").exists()
    assert "no main table" in report.text()


# --- the released BooookScore human data ------------------------------------------------


def _released(name: str) -> Path:
    path = HUMAN_DATA / name
    if not path.exists():
        missing_shared(f"booookscore/human/{name}")
    return path


def _tables(judgments: list[Judgment]) -> dict[str, MetaTable]:
    inputs = MetaInputs((), tuple(judgments), {}, {}, ())
    boot = Boot(resamples=200)
    declared = plugin_tables("sqlite:///unused.db", [], inputs, boot, reserved=())  # every hook
    tables, _ = build_tables(inputs, ("booookscore/score",), boot, declared)
    return {t.name: t for t in tables}


def test_released_preferences_give_table_4_as_percentages() -> None:
    candidates = {
        "hier": read_summaries(_released("gpt4-4096-hier.human-annotations.json")),
        "inc": read_summaries(_released("gpt4-4096-inc.summaries-annotator1-books.json")),
    }
    path = _released("preference-formal-annotator1.labelstudio.json")
    judgments, unmatched = read_labelstudio(path, None, candidates)
    assert unmatched == []
    table = _tables(judgments)["meta_preferences"]
    assert {(row[0], row[1]) for row in table.rows} == {("hier", "inc")}  # A = hier by label
    got = {
        str(row[2]): [c.value if isinstance(c, st.Stat) else None for c in row[4:]]
        for row in table.rows
    }
    counts = json.loads(_released("preference-formal-annotator1.counts.json").read_text())
    for criterion in ("detail", "structure", "logic", "preference"):
        said = counts[criterion.capitalize()]
        expected = [5.0 * said["hier"], 5.0 * said["inc"], 5.0 * said["draw"], None]  # of 20
        assert got[criterion] == pytest.approx(expected), criterion
    assert got["detail"][:3] == pytest.approx([20.0, 75.0, 5.0])  # Table 4: inc 75 / hier 20
    assert got["contradiction"] == [None, None, None, pytest.approx(5.0 * counts["Contradiction"])]
    omission = [5.0 * counts["Hier Omission"], 5.0 * counts["Inc Omission"], None, None]
    assert got["omission"] == pytest.approx(omission)
    assert all(row[3] == 20 for row in table.rows)


def test_released_validation_sample_precision() -> None:
    path = _released("validation-sample.json")
    books = {
        source: sum(any(a["source"] == source for a in entry["annotations"]) for entry in data)
        for data in [list(json.loads(path.read_text()).values())]
        for source in ("human", "model")
    }
    rows = {row[0]: row for row in _tables(read_validation_sample(path))["meta_precision"].rows}
    for source, hits, total in (("human", 86, 113), ("model", 35, 58)):
        stat = rows[source][-1]
        assert isinstance(stat, st.Stat)
        assert stat.value == pytest.approx(100.0 * hits / total)  # 76.1% and 60.3%
        assert rows[source][2] == total
        assert stat.low <= stat.value <= stat.high
        assert stat.n == rows[source][1] == books[source]  # the books resampled


def test_released_hier_annotations_have_no_judged_run_to_compare() -> None:
    path = _released("gpt4-4096-hier.human-annotations.json")
    annotations = read_author_annotations(path, "hier", "authors")
    inputs = MetaInputs((), tuple(annotations), {}, {}, ())
    boot = Boot(resamples=100)
    declared = plugin_tables("sqlite:///unused.db", [], inputs, boot, reserved=())  # every hook
    tables, notes = build_tables(inputs, ("booookscore/score",), boot, declared)
    assert tables == []  # no GPT-4 annotations or scores of these same summaries are released
    assert any("meta_sentences" in n for n in notes) and any("meta_summaries" in n for n in notes)
    assert run_label("hier", {}) == "hier"


def test_figure_has_a_panel_per_metric_with_points() -> None:
    from runner.plugins import values as value_facts
    from runner.report.meta.plots import meta_figure

    bounded = ("BooookScore (human)",)  # as make.bounded_axes gives them
    facts = value_facts.recorded({}, {"metrics": "booookscore,stats"})  # their VALUES
    ranges = {key: value.range for key, value in facts.items() if value.range is not None}
    assert ranges["booookscore/score"] == (0, 100) and "stats/length_tokens" not in ranges
    assert meta_figure({("BooookScore (human)", "booookscore/score"): []}, bounded) is None
    points = {
        ("BooookScore (human)", "booookscore/score"): [(50.0, 40.0), (100.0, 90.0)],
        ("BooookScore (human)", "stats/length_tokens"): [(50.0, 700.0), (100.0, 650.0)],
        ("BooookScore (human)", "stats/repeated_trigrams_pct"): [],
    }
    figure = meta_figure(points, bounded, ranges)
    assert figure is not None
    titles = [axes.get_title() for axes in figure.axes]
    assert titles == ["n=2, tau=1.00, r=1.00", "n=2, tau=-1.00, r=-1.00"]
    assert figure.axes[0].get_ylim() == (-5.0, 105.0)  # a BooookScore axis shows 0..100


def test_numeric_ratings_are_a_human_score_too() -> None:
    from runner.human.judgments import Rating
    from runner.tracking.reader import RunRecord

    run = RunRecord("r" * 32, "hier", "1", "FINISHED", 0, 1, {"strategy": "hier"}, {}, {})
    ratings = [
        Rating(doc, run.run_id, "likert", value, who)
        for doc, value, who in (("d1", 2, "a"), ("d1", 4, "b"), ("d2", 5, "a"), ("d3", 1, "a"))
    ]
    ratings.append(Rating("d3", run.run_id, "fluent", "yes", "a"))  # a label: not a score
    scores = {run.run_id: {"d1": {"m": 10.0}, "d2": {"m": 30.0}, "d3": {"m": 5.0}}}
    inputs = MetaInputs((), tuple(ratings), {run.run_id: run}, scores, ())
    tables, _ = build_tables(inputs, ("m",), Boot(resamples=100))
    rows = {t.name: t.rows for t in tables}["meta_summaries"]
    human, metric = [3.0, 5.0, 1.0], [10.0, 30.0, 5.0]  # d1's two annotators averaged
    assert [r[:3] for r in rows] == [("likert (human)", "m", 3)]
    tau = rows[0][3]
    assert isinstance(tau, st.Stat)
    assert tau.value == pytest.approx(scipy_stats.kendalltau(human, metric).statistic)


def test_a_metric_orders_pairs_the_way_its_plugin_declares_better() -> None:
    """Lower-is-better flips which summary a metric prefers; a value declared with no
    direction is left out of the pairs table with a line; an undeclared one reads higher."""
    from runner.human.judgments import Preference
    from runner.plugins.values import tag
    from runner.tracking.reader import RunRecord

    declared = json.dumps({"err": {"better": "lower"}, "len": {}})
    a, b = (
        RunRecord(c * 32, c, "1", "FINISHED", 0, 1, {"strategy": c}, {}, {tag("m"): declared})
        for c in "ab"
    )
    # people prefer a's summary of d1 and b's of d2; a has fewer errors in d1, b in d2
    scores = {
        a.run_id: {"d1": {"m/err": 1.0, "m/len": 9.0, "m/raw": 1.0}, "d2": {"m/err": 4.0}},
        b.run_id: {"d1": {"m/err": 3.0, "m/len": 5.0, "m/raw": 2.0}, "d2": {"m/err": 2.0}},
    }
    people = [
        Preference(doc, (a.run_id, b.run_id), "ann", {"preference": winner})
        for doc, winner in (("d1", a.run_id), ("d2", b.run_id))
    ]
    inputs = MetaInputs((), tuple(people), {a.run_id: a, b.run_id: b}, scores, ())
    tables, notes = build_tables(inputs, ("m/err", "m/len", "m/raw"), Boot(resamples=100))
    rows = {t.name: t.rows for t in tables}["meta_orderings"]
    got = {row[0]: row[1:6] for row in rows}
    assert got == {
        "m/err": ("lower", "preference", 2, 2, 0),  # both orders agree with the people
        "m/raw": ("higher (undeclared)", "preference", 1, 0, 1),  # prefers b's d1
    }
    assert (
        "not compared on pairs: m/len has no better direction (its plugin declares "
        "Value(better=None)): which summary it prefers cannot be told"
    ) in notes


def test_a_panels_members_each_get_a_row_after_the_panel() -> None:
    """A panel run (judges=[x,y]) keeps each member's ``m:x/err`` beside the pooled ``m/err``:
    the summary table and the pairs table give each member a row after the panel's, each
    member's direction the metric's, its tau the member's own values against people's."""
    from runner.human.judgments import Preference, Rating
    from runner.plugins.values import tag
    from runner.tracking.reader import RunRecord

    declared = json.dumps({"err": {"better": "lower"}})
    a, b = (
        RunRecord(c * 32, c, "1", "FINISHED", 0, 1, {"judges": "x,y"}, {}, {tag("m"): declared})
        for c in "ab"
    )
    x = {(a, "d1"): 1.0, (a, "d2"): 4.0, (a, "d3"): 2.0, (b, "d1"): 3.0, (b, "d2"): 2.0}
    y = {(a, "d1"): 3.0, (a, "d2"): 1.0, (a, "d3"): 5.0, (b, "d1"): 1.0, (b, "d2"): 4.0}
    scores: dict[str, dict[str, dict[str, float]]] = {}
    for (run, doc), value in x.items():
        pooled = (value + y[(run, doc)]) / 2
        values = {"m/err": pooled, "m:x/err": value, "m:y/err": y[(run, doc)]}
        scores.setdefault(run.run_id, {})[doc] = values
    likert = {"d1": 4, "d2": 1, "d3": 3}  # people's rating of a's summaries
    people: list[Any] = [Rating(d, a.run_id, "likert", v, "ann") for d, v in likert.items()]
    people += [  # people prefer a's summary of d1 and b's of d2
        Preference(doc, (a.run_id, b.run_id), "ann", {"preference": winner})
        for doc, winner in (("d1", a.run_id), ("d2", b.run_id))
    ]
    inputs = MetaInputs((), tuple(people), {a.run_id: a, b.run_id: b}, scores, ())
    tables, _ = build_tables(inputs, ("m/err",), Boot(resamples=100))
    made = {t.name: t.rows for t in tables}
    summary = made["meta_summaries"]
    assert [r[1] for r in summary] == ["m/err", "m:x/err", "m:y/err"]
    for row, values in zip(summary[1:], (x, y), strict=True):
        mine = [values[(a, d)] for d in likert]
        expected = scipy_stats.kendalltau(list(likert.values()), mine).statistic
        assert isinstance(row[3], st.Stat) and row[3].value == pytest.approx(expected)
    orderings = {row[0]: row[1:6] for row in made["meta_orderings"]}
    assert orderings == {  # lower is better for each: x orders both as people, y neither
        "m/err": ("lower", "preference", 2, 0, 1),  # the panel: d1 a tie, d2 the wrong way
        "m:x/err": ("lower", "preference", 2, 2, 0),
        "m:y/err": ("lower", "preference", 2, 0, 2),
    }
