"""Every judged metric asks at the judge's settings the run records (``judge.temperature``...).

``judge.temperature=0.7 judge.samples=3`` once reached BooookScore's judge but not the
faithfulness judge, whose own ``temperature`` (0) won in silence: the run's params said 0.7,
every request went out at 0, and the samples' alpha was a temperature-0 alpha. Here each
built-in metric that asks a judge runs against a loopback server, and the requests it
received (its own log) are held against the run's recorded params.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.config.run_config import build_run_config
from runner.run.lifecycle import run_experiment
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.config.test_config import composed

SOURCES = {
    "mill": "The old mill by the river stopped turning in the dry summer. The miller sold it.",
    "fox": "A fox raised her cubs under the library steps. The librarian left them water.",
}
SUMMARIES = {"mill": "The mill stopped in summer.", "fox": "A fox lived under the library."}


def _answer(request: dict[str, Any]) -> str:
    """Yes to a yes/no question; a JSON object the JSON-asking metrics can read in part."""
    if request.get("response_format"):
        return json.dumps({"claims": ["The mill stopped."], "verdict": "yes", "reason": "ok"})
    return "Yes"


def _run(url: str, stores: dict[str, str], tmp_path: Path, *extra: str) -> tuple[Any, list[str]]:
    sources = tmp_path / "sources"
    sources.mkdir(exist_ok=True)
    for doc, text in SOURCES.items():
        (sources / f"{doc}.txt").write_text(text, encoding="utf-8")
    data = tmp_path / "summaries.json"
    data.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    items = [
        "strategy=none",
        "data=summaries",
        f"data.path={data}",
        f"data.sources={sources}",
        "judge=openai_compatible",
        f"judge.api_base={url}",
        "judge.model=openai/judge",
        "judge.temperature=0.7",
        "judge.top_p=0.9",
        "on_error=continue",
        *extra,
        *[f"{k}={v}" for k, v in stores.items()],
    ]
    result = run_experiment(build_run_config(composed(*items), tuple(items)))
    return result, list(result.warnings)


@pytest.mark.parametrize(
    "metric",
    [
        "faithfulness",
        "faithfulness_cot",
        "faithfulness_claims",
        "booookscore",
        "alignment",
        "coverage",
        "f1",
        "vagueness",
    ],
)
def test_each_judged_metric_asks_at_the_temperature_and_top_p_the_run_records(
    metric: str, stores: dict[str, str], tmp_path: Path
) -> None:
    method = {"faithfulness_cot": "cot", "faithfulness_claims": "claims"}.get(metric)
    chosen = [f"metrics={metric.split('_')[0]}"]
    if method:
        chosen.append(f"metrics.faithfulness.method={method}")
    with FakeOpenAIServer(_answer) as server:
        result, warnings = _run(server.url, stores, tmp_path, *chosen)
    sent = server.requests
    assert len(sent) >= len(SUMMARIES), f"{metric}: the judge was asked {len(sent)} times"
    assert {r["temperature"] for r in sent} == {0.7}, metric
    assert {r["top_p"] for r in sent} == {0.9}, metric
    params = MlflowClient(stores["tracking.uri"]).get_run(result.run_id).data.params
    assert params["judge.temperature"] == "0.7"
    assert not [w for w in warnings if "temperature" in w]


def test_a_metric_temperature_of_its_own_is_sent_and_named_in_one_line(
    stores: dict[str, str], tmp_path: Path
) -> None:
    with FakeOpenAIServer(_answer) as server:
        own = ("metrics=faithfulness", "metrics.faithfulness.temperature=0")
        _, warnings = _run(server.url, stores, tmp_path, *own)
    assert {r["temperature"] for r in server.requests} == {0.0}
    assert [w for w in warnings if "temperature" in w] == [
        "metrics.faithfulness.temperature=0.0 asks its judge at 0.0, not at "
        "judge.temperature=0.7 as the run's params say of the judge: set "
        "metrics.faithfulness.temperature=null to use the judge's"
    ]


def test_a_panel_of_ones_own_aliases_sweeps_with_samples(tmp_path: Path) -> None:
    """The docs' ``judge.samples=3`` with aliases of one's own (no ``samples:`` line), and a
    panel in a ``-m`` sweep: once "not a config key" and "needs the model role judge:a"."""
    from tests.helpers.in_process import run_in_process

    with FakeOpenAIServer(_answer) as server:
        (tmp_path / "judge").mkdir()
        for name in "abc":
            (tmp_path / "judge" / f"{name}.yaml").write_text(
                "defaults:\n  - /model/openai_compatible@_here_\n  - _self_\n"
                f"name: {name}\nmodel: openai/{name}\napi_base: {server.url}\ntemperature: 0.0\n",
                encoding="utf-8",
            )
        data = tmp_path / "summaries.json"
        data.write_text(json.dumps(SUMMARIES), encoding="utf-8")
        sources = tmp_path / "sources"
        sources.mkdir()
        for doc, text in SOURCES.items():
            (sources / f"{doc}.txt").write_text(text, encoding="utf-8")
        done = run_in_process(
            "-m", "--config-dir", str(tmp_path), "judges=[a,b],[b,c]", "judge.samples=2",
            "strategy=none", "data=summaries", f"data.path={data}", f"data.sources={sources}",
            "metrics=faithfulness", f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"cache.dir={tmp_path / 'cache'}", cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    asked = sorted(r["model"] for r in server.requests)
    # each member's two samples of two summaries, its own model; b's in the second cell are
    # the first's requests, answered from the response cache
    assert asked == sorted(["a"] * 4 + ["b"] * 4 + ["c"] * 4), asked
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    finished = [r for r in runs if "judges" in r.data.params]
    assert sorted(r.data.params["judges"] for r in finished) == ["a,b", "b,c"]
    assert {r.info.status for r in finished} == {"FINISHED"}
    assert {r.data.params["judge:b.samples"] for r in finished} == {"2"}
