"""``judge.samples=K``: each judged item asked K times, pooled by kind, kept, and agreed on.

A researcher's metric asks the judge (a loopback OpenAI-compatible server) to rate each
given summary; the server answers from the request's seed, so the K samples of one item
differ as a sampling judge's do. What the run records is checked against what the server
answered (its own log), never against the runner's output.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import types
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from runner.api.errors import ConfigError
from runner.api.metric import Metric
from runner.api.types import LLM, Document, MetricResult
from runner.api.value import Value
from runner.config.run_config import build_run_config
from runner.llm.request import slot_seed
from runner.run.lifecycle import RunResult, run_experiment
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.in_process import run_in_process
from tests.helpers.plugins import register
from tests.helpers.ports import free_port
from tests.runner.config.test_config import composed

SUMMARIES = {
    "tide": "Mara and her brother wait on the rocks until the boat returns.",
    "mill": "The mill stops.",
    "fox": "A fox and her cubs live under the library steps.",
    "bell": "The bell rings twice and the town wakes.",
}


class _Rating(Metric):
    headline = ("rating", "good")

    def __init__(self, judge: LLM) -> None:
        self.judge = judge

    def score(self, document: Document | None, summary: str) -> MetricResult:
        rating = float(self.judge.complete(f"Rate 1-5: {summary}", purpose="rating").text)
        return MetricResult({"rating": rating, "good": float(rating >= 3)})


def _setup(judge: LLM) -> _Rating:
    return _Rating(judge)


@pytest.fixture
def rating(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("rating")
    module.ROLES = ("judge",)  # type: ignore[attr-defined]
    module.PROMPT_DIRS = ()  # type: ignore[attr-defined]
    module.VALUES = {"rating": Value(kind="ordinal"), "good": Value(kind="label")}  # type: ignore[attr-defined]
    module.setup = _setup  # type: ignore[attr-defined]
    register(monkeypatch, "metrics", "rating", module)


class Judge:
    """Answers a rating from the request's seed; keeps (summary, seed, rating) of each ask."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int, int]] = []

    def __call__(self, request: dict[str, Any]) -> str:
        summary = str(request["messages"][-1]["content"]).removeprefix("Rate 1-5: ")
        seed = int(request["seed"])
        rating = 1 + (seed * 7 + len(summary)) % 5
        self.asked.append((summary, seed, rating))
        return str(rating)


def _run(url: str, stores: dict[str, str], tmp_path: Path, *extra: str) -> RunResult:
    data = tmp_path / "summaries.json"
    data.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    items = [
        "strategy=none",
        "data=summaries",
        f"data.path={data}",
        "judge=openai_compatible",
        f"judge.api_base={url}",
        "judge.model=openai/judge",
        "metrics=stats",
        *extra,
        *[f"{k}={v}" for k, v in stores.items()],
    ]
    raw = composed(*items)
    raw["metrics"]["rating"] = {}
    return run_experiment(build_run_config(raw, tuple(items)))


def test_each_item_is_asked_k_times_pooled_by_kind_kept_and_agreed_on(
    rating: None, stores: dict[str, str], tmp_path: Path
) -> None:
    judge = Judge()
    with FakeOpenAIServer(judge) as server:
        result = _run(server.url, stores, tmp_path, "judge.samples=3", "judge.temperature=0.7")
        asked_first = len(judge.asked)
        again = _run(server.url, stores, tmp_path, "judge.samples=3", "judge.temperature=0.7")
    assert asked_first == 3 * len(SUMMARIES) and len(judge.asked) == asked_first  # rerun: cached
    assert again.totals.cache_hits == asked_first
    assert {r["temperature"] for r in server.requests} == {0.7}
    seeds = {s: {seed for text, seed, _ in judge.asked if text == s} for s in SUMMARIES.values()}
    assert all(len(found) == 3 for found in seeds.values())  # three distinct requests each
    # The samples are asked at once, so they arrive in any order: sample k is the one asked
    # with slot k's seed (the run's seed, 0, for the first).
    slot_of = {slot_seed(0, k): k for k in range(3)}
    answers: dict[str, list[int]] = {s: [0, 0, 0] for s in SUMMARIES.values()}
    for summary, seed, given in judge.asked:
        answers[summary][slot_of[seed]] = given

    client = MlflowClient(stores["tracking.uri"])
    folder = Path(client.download_artifacts(result.run_id, "", str(tmp_path / "got")))
    scores = json.loads((folder / "scores.json").read_text())
    samples = json.loads((folder / "samples.json").read_text())
    for doc, summary in SUMMARIES.items():
        given = answers[summary]
        assert scores[doc]["rating/rating"] == pytest.approx(statistics.mean(given))
        good = [float(g >= 3) for g in given]
        assert scores[doc]["rating/good"] == max(set(good), key=good.count)  # 3 samples: no tie
        drawn = samples[doc]["rating"]
        assert [s["values"]["rating"] for s in drawn] == [float(g) for g in given]
        assert [(s["judge"], s["sample"]) for s in drawn] == [("", 0), ("", 1), ("", 2)]
        assert "rating" not in samples[doc].get("stats", {}) and "stats" not in samples[doc]

    rows = [[float(answers[s][k]) for s in SUMMARIES.values()] for k in range(3)]
    expected = krippendorff.alpha(reliability_data=np.array(rows), level_of_measurement="ordinal")
    metrics = client.get_run(result.run_id).data.metrics
    assert metrics["rating/rating/samples_alpha"] == pytest.approx(expected)
    assert metrics["rating/rating/samples_alpha_low"] <= expected
    assert any(
        line.startswith("rating/rating: the judge's 3 samples agree") for line in result.agreement
    )
    assert not any("temperature=0" in w for w in result.warnings)

    experiment = client.get_run(result.run_id).info.experiment_id
    traces = client.search_traces(
        locations=[experiment], filter_string=f"attributes.run_id = '{result.run_id}'"
    )
    per_sample = {
        (t.info.tags["runner.document"], a.metadata["sample"]): a.value
        for t in traces
        for a in t.info.assessments
        if a.name == "rating/rating" and a.metadata and "sample" in a.metadata
    }
    expected_samples = {
        (doc, str(k)): float(answers[summary][k])
        for doc, summary in SUMMARIES.items()
        for k in range(3)
    }
    assert per_sample == expected_samples

    # The report's cell resamples documents and, within each, the judge's samples.
    from runner.report.config import ReportConfig
    from runner.report.make import make_report

    out = tmp_path / "report"
    report = make_report(
        ReportConfig(uri=stores["tracking.uri"], experiment="summarization", out=out)
    )
    cell = next(e for (_, _, m), e in report.table.cells.items() if m == "rating/rating")
    means = [statistics.mean(answers[s]) for s in SUMMARIES.values()]
    assert cell.samples == 3 and cell.n == len(SUMMARIES)  # the newest run of the cell
    assert cell.mean == pytest.approx(statistics.mean(means))
    assert cell.within == pytest.approx(
        statistics.mean(statistics.variance(answers[s]) for s in SUMMARIES.values())
    )
    assert "cluster bootstrap" in report.markdown and "Judged once" in report.markdown
    assert dict(cell.agreement)["samples"] == pytest.approx(expected)
    assert f"alpha among samples {expected:.2f}" in report.markdown


def test_at_temperature_zero_the_run_says_what_the_samples_measure(
    rating: None, stores: dict[str, str], tmp_path: Path
) -> None:
    with FakeOpenAIServer(Judge()) as server:
        result = _run(server.url, stores, tmp_path, "judge.samples=2")
    (line,) = [w for w in result.warnings if "judge.samples" in w]
    assert line.startswith("judge.samples=2 at temperature 0: the samples measure only")


def test_a_bad_samples_setting_is_one_line() -> None:
    with pytest.raises(ConfigError) as raised:
        build_run_config(composed("judge.samples=0"), ("judge.samples=0",))
    assert str(raised.value) == "judge.samples=0 is out of range: at least 1; e.g. judge.samples=3"
    raw = composed()
    raw["model"]["samples"] = 3  # Hydra refuses the key on the command line; a dict may not
    with pytest.raises(ConfigError) as raised:
        build_run_config(raw, ())
    assert str(raised.value) == (
        "model.samples=3: repeated samples are the judge's; use judge.samples=3 (or remove "
        "model.samples)"
    )


def test_the_offline_preset_samples_the_embedded_judge_three_times_at_0_7() -> None:
    config = build_run_config(composed("+experiment=judge_reliability"), ())
    judge = config.roles["judge"]
    assert (judge.samples, judge.temperature, judge.is_local) == (3, 0.7, True)
    assert config.data.source == "sample" and list(config.metrics) == ["vagueness"]
    assert config.strategy == "baseline" and config.experiment == "judge_reliability"


def _panel(url: str, stores: dict[str, str], tmp_path: Path, *extra: str) -> RunResult:
    """A job whose metric is judged by the panel judges=[a,b], both on the loopback server."""
    from runner.config.panel import with_members

    data = tmp_path / "summaries.json"
    data.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    items = ["strategy=none", "data=summaries", f"data.path={data}", "metrics=stats", *extra]
    items += [f"{k}={v}" for k, v in stores.items()]
    raw = composed(*items)
    raw["metrics"]["rating"] = {}
    raw["judges"] = ["a", "b"]

    def member(overrides: list[str]) -> dict[str, Any]:  # judge=a: a model of the server
        name = overrides[-1].removeprefix("judge=")
        ours = ["judge=openai_compatible", f"judge.api_base={url}", f"judge.model=openai/{name}"]
        return composed(*overrides[:-1], *ours)

    raw = with_members(raw, items, member)
    config = build_run_config(raw, tuple(items))
    return run_experiment(config)


class Panel(Judge):
    """Judge ``a`` rates from the seed; judge ``b`` one point higher (at most 5)."""

    def __call__(self, request: dict[str, Any]) -> str:
        rating = int(super().__call__(request))
        if request["model"] == "b":
            rating = min(5, rating + 1)
            summary, seed, _ = self.asked[-1]
            self.asked[-1] = (summary, seed, rating)
        self.by_model.append(request["model"])
        return str(rating)

    def __init__(self) -> None:
        super().__init__()
        self.by_model: list[str] = []


def test_a_panel_asks_every_member_records_each_and_pools_them(
    rating: None, stores: dict[str, str], tmp_path: Path
) -> None:
    judge = Panel()
    with FakeOpenAIServer(judge) as server:
        result = _panel(server.url, stores, tmp_path, "judge.temperature=0.7")
    assert sorted(judge.by_model) == ["a"] * 4 + ["b"] * 4  # every item to every member
    client = MlflowClient(stores["tracking.uri"])
    run = client.get_run(result.run_id)
    folder = Path(client.download_artifacts(result.run_id, "", str(tmp_path / "got")))
    scores = json.loads((folder / "scores.json").read_text())
    given = {(m, s): r for (s, _, r), m in zip(judge.asked, judge.by_model, strict=True)}
    for doc, summary in SUMMARIES.items():
        a, b = given[("a", summary)], given[("b", summary)]
        assert scores[doc]["rating:a/rating"] == a and scores[doc]["rating:b/rating"] == b
        assert scores[doc]["rating/rating"] == pytest.approx((a + b) / 2)  # the panel's mean
    assert run.data.params["judges"] == "a,b" and run.data.params["judge:b.model"] == "openai/b"
    rows = [[float(given[(m, s)]) for s in SUMMARIES.values()] for m in ("a", "b")]
    expected = krippendorff.alpha(reliability_data=np.array(rows), level_of_measurement="ordinal")
    assert run.data.metrics["rating/rating/judges_alpha"] == pytest.approx(expected)
    assert "rating:a/rating" in result.system_metrics
    usage = {r: 0 for r in ("judge:a", "judge:b")}
    for line in (folder / "calls.jsonl").read_text().splitlines():
        usage[json.loads(line)["role"]] += 1
    assert usage == {"judge:a": 4, "judge:b": 4}  # each member's own calls
    from runner.report.config import ReportConfig
    from runner.report.make import make_report

    config = ReportConfig(
        uri=stores["tracking.uri"], experiment="summarization", out=tmp_path / "r"
    )
    cell = next(
        e for (_, _, m), e in make_report(config).table.cells.items() if m == "rating/rating"
    )
    split = statistics.mean(
        statistics.variance([given[("a", s)], given[("b", s)]]) for s in SUMMARIES.values()
    )
    assert cell.members == pytest.approx(split) and cell.within != cell.within  # one sample each


def test_a_member_that_fails_ends_the_job_without_waiting_for_the_other(
    rating: None, stores: dict[str, str], tmp_path: Path
) -> None:
    """Member b answers no rating (the metric fails on it) while member a's answer is still
    awaited, as a batch would be: the job fails with b's error at once, not after a's wait."""
    release = threading.Event()

    def answer(request: dict[str, Any]) -> str:
        if request["model"] == "a":
            release.wait(60)
            return "3"
        return "no idea"

    with FakeOpenAIServer(answer) as server:
        start = time.monotonic()
        try:
            with pytest.raises(Exception, match="no idea") as caught:
                _panel(server.url, stores, tmp_path)
            elapsed = time.monotonic() - start
        finally:
            release.set()
    assert elapsed < 30, f"{elapsed:.0f} s: the job waited for member a ({caught.value})"


def test_a_members_fix_names_its_alias_file_not_a_key_that_sets_every_member(
    tmp_path: Path,
) -> None:
    """A member's missing key or silent server is one line whose fix a user can follow: its
    alias file, or the panel without it (``judge.api_base=`` would move every member)."""
    folder = tmp_path / "judge"
    folder.mkdir()
    port = free_port()  # nothing listens there
    (folder / "far.yaml").write_text(
        "defaults:\n  - /model/openai_compatible@_here_\n  - _self_\n"
        f"temperature: 0.0\nsamples: 1\napi_base: http://127.0.0.1:{port}/v1\n"
        "model: openai/far\n",
        encoding="utf-8",
    )
    far = run_in_process(
        "--config-dir", str(tmp_path), "judges=[local,far]", "data.limit=1", cwd=tmp_path
    )
    keyless = run_in_process("judges=[gpt4,claude]", "data.limit=1", cwd=tmp_path)
    assert far.returncode == 2 and far.stderr.strip().splitlines() == [
        f"error: judge:far=openai_compatible: cannot reach http://127.0.0.1:{port}/v1 "
        "([Errno 111] Connection refused); start the server or fix api_base in judge/far.yaml"
    ]
    assert keyless.returncode == 2 and keyless.stderr.strip().splitlines() == [
        "error: judge:gpt4=gpt4 needs OPENAI_API_KEY in the environment; export it, or leave "
        "gpt4 out of judges=[...]"
    ]


@pytest.mark.parametrize(
    ("judges", "words"),
    [
        ([], "judges=[] names no judge"),
        (["a"], "judges=[a] has one member: a panel needs two or more; for one judge use judge=a"),
        (["a", "a"], "judges= names a twice"),
        (["gpt4", "nosuch"], "no judge alias 'nosuch'"),
    ],
)
def test_a_bad_panel_is_one_line(judges: list[str], words: str) -> None:
    from runner.config.panel import with_members

    raw = composed()
    raw["judges"] = judges
    with pytest.raises(ConfigError) as raised:
        with_members(raw, [], lambda overrides: composed(*overrides))
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_a_judge_chosen_beside_a_panel_is_one_line_not_dropped() -> None:
    """``judge=claude`` with ``judges=[...]``: one of the two would be ignored; refused."""
    from runner.config.panel import with_members

    raw = composed("judge=claude")
    raw["judges"] = ["local", "gpt4"]
    with pytest.raises(ConfigError) as raised:
        with_members(raw, ["judge=claude"], lambda overrides: composed(*overrides))
    assert str(raised.value) == (
        "judge=claude and judges=[local,gpt4] both choose the judge, and a panel replaces "
        "judge=; drop judge=claude, or add claude to judges=[...]"
    )
    panel = with_members(raw, ["judge.temperature=0.7"], lambda o: composed(*o))
    assert panel["judge:gpt4"]["temperature"] == 0.7  # judge.<key> still applies to each
