"""A plugin that breaks while the job runs it: one line, a FAILED run, the traceback kept.

Each case is a loose module in a study folder (``<name>.py`` beside ``my_conf/``), run with
``python -m runner`` from that folder, as a researcher runs their own code: a strategy that
raises inside a library call, a strategy that returns a ``str``, a metric whose values hold
a word, a metric whose values miss its declared headline, and a metric whose ``setup``
raises. Each ends with exit status 2 and exactly one line on stderr naming the plugin, its
file and line (computed here from the source text written, not by the runner) and what
broke, no traceback on the screen; the run in the store is FAILED with that line as its
reason and the whole traceback as its ``error.txt`` artifact. ``verbose=true`` and
``hydra.verbose=true`` print the traceback; in a ``-m`` sweep the job's line reaches the
sweep's last line and the sweep exits 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from tests.helpers.artifacts import artifact

HEADER = """\
from runner.api import Metric, MetricResult, StrategyResult

ROLES = ()
PROMPT_DIRS = ()
"""
STRATEGY = HEADER + "IGNORES = {}\n"

FIRST_LINE = (
    STRATEGY
    + """

def summarize(chunks):
    return StrategyResult(summary=chunks[0].text.split(".")[0] + ".")
"""
)
"""A strategy that keeps its contract, for the metric cases."""

RAISES = (
    STRATEGY
    + """
import json


def _outline(text):
    return json.loads(text[:40])  # the plugin's bug: the text is not JSON


def summarize(chunks):
    return StrategyResult(summary=str(_outline(chunks[0].text)))
"""
)
RETURNS_STR = (
    STRATEGY
    + """

def summarize(chunks):
    return chunks[0].text[:200]
"""
)
WORDY = (
    HEADER
    + """

class Verdict(Metric):
    headline = ("verdict",)

    def score(self, document, summary):
        return MetricResult(values={"verdict": "high"})


def setup():
    return Verdict()
"""
)
MISNAMED = (
    HEADER
    + """

class Ratio(Metric):
    headline = ("ratio",)

    def score(self, document, summary):
        return MetricResult(values={"ration": len(summary) / len(document.text)})


def setup():
    return Ratio()
"""
)
SETUP_RAISES = (
    HEADER
    + """

def setup():
    return {"ratio": 1}["ration"]
"""
)


@dataclass(frozen=True)
class Study:
    """A study folder with the plugins written into it, and its MLflow store."""

    folder: Path

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.folder / 'mlflow.db'}"

    def write(self, kind: str, name: str, source: str) -> Path:
        """``<name>.py`` and its config option ``my_conf/<kind>/<name>.yaml``."""
        (self.folder / "my_conf" / kind).mkdir(parents=True, exist_ok=True)
        option = f"name: {name}\n" if kind == "strategy" else f"{name}: {{}}\n"
        (self.folder / "my_conf" / kind / f"{name}.yaml").write_text(option)
        module = self.folder / f"{name}.py"
        module.write_text(source, encoding="utf-8")
        return module

    def run(self, *args: str, limit: int = 1) -> subprocess.CompletedProcess[str]:
        """``python -m runner`` from the folder, on ``limit`` sample stories, offline."""
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        return subprocess.run(
            [sys.executable, "-m", "runner", "--config-dir", "my_conf", *args]
            + [f"data.limit={limit}", "progress=false", f"tracking.uri={self.uri}"]
            + [f"cache.dir={self.folder / 'cache'}"],
            cwd=self.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def runs(self) -> list[Any]:
        """The job runs in the store (a sweep's parent left out)."""
        client = MlflowClient(self.uri)
        experiment = client.get_experiment_by_name("summarization")
        found = client.search_runs([experiment.experiment_id]) if experiment else []
        return [r for r in found if r.data.tags.get("runner.kind") != "sweep"]

    def error_txt(self, run: Any) -> str:
        return artifact(MlflowClient(self.uri), run.info.run_id, "error.txt")


@pytest.fixture
def study(tmp_path: Path) -> Study:
    return Study(tmp_path)


def line_of(source: str, text: str) -> int:
    """The 1-based line of ``source`` holding ``text`` (exactly one)."""
    (number,) = [i for i, line in enumerate(source.splitlines(), 1) if text in line]
    return number


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The only line on stderr, after checking the exit and that no traceback was shown."""
    assert done.returncode == 2, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    return lines[0]


def failed_run(study: Study, line: str) -> tuple[Any, str]:
    """The one run of the store: FAILED with the printed line as its reason; its error.txt."""
    (run,) = study.runs()
    assert run.info.status == "FAILED"
    assert line.removeprefix("error: ") in run.data.tags["failure"]
    assert (
        "PluginFailure" in run.data.tags["failure"]
        or "PluginContractBreach" in (run.data.tags["failure"])
    )
    return run, study.error_txt(run)


def test_a_strategy_that_raises_is_named_at_its_own_line(study: Study) -> None:
    module = study.write("strategy", "outline", RAISES)
    done = study.run("strategy=outline", "metrics=none")
    line = one_line(done)
    where = f"{module}:{line_of(RAISES, 'json.loads(text[:40])')}"  # innermost frame in the plugin
    assert line.startswith(f"error: strategy 'outline' ({where}) raised JSONDecodeError: "), line
    assert "fix the strategy's code" in line and "error.txt" in line
    _, text = failed_run(study, line)
    assert text.startswith("Traceback") and "json/decoder.py" in text  # the whole traceback
    assert f'File "{module}", line {line_of(RAISES, "json.loads(text[:40])")}' in text


def test_a_strategy_that_returns_a_str_breaks_its_contract(study: Study) -> None:
    module = study.write("strategy", "plain", RETURNS_STR)
    line = one_line(study.run("strategy=plain", "metrics=none"))
    where = f"{module}:{line_of(RETURNS_STR, 'def summarize')}"
    assert line.startswith(f"error: strategy 'plain' ({where}) summarize returned str '"), line
    assert "not a StrategyResult; return runner.api.StrategyResult(summary=<str>" in line
    _, text = failed_run(study, line)
    assert "PluginContractBreach" in text


def test_a_metric_value_that_is_a_word_names_the_metric(study: Study) -> None:
    study.write("strategy", "first_line", FIRST_LINE)
    module = study.write("metrics", "verdict", WORDY)
    line = one_line(study.run("strategy=first_line", "metrics=verdict"))
    where = f"{module}:{line_of(WORDY, 'def score')}"
    assert line.startswith(f"error: metric 'verdict' ({where}) score returned "), line
    assert "values['verdict'] = str 'high', not a number" in line
    run, _ = failed_run(study, line)
    assert "verdict/verdict" not in run.data.metrics


def test_values_that_miss_the_declared_headline_fail_the_run(study: Study) -> None:
    study.write("strategy", "first_line", FIRST_LINE)
    module = study.write("metrics", "ratio", MISNAMED)
    line = one_line(study.run("strategy=first_line", "metrics=ratio"))
    where = f"{module}:{line_of(MISNAMED, 'class Ratio')}"
    assert line == (
        f"error: metric 'ratio' ({where}) declares headline ratio but its values are ration; "
        "give every headline value (NaN when undecidable), or name in headline the values it "
        "gives"
    )
    run, text = failed_run(study, line)
    assert not [k for k in run.data.metrics if k.startswith("ratio/")]
    assert "PluginContractBreach" in text


def test_a_metric_setup_that_raises_is_one_line_and_no_run(study: Study) -> None:
    study.write("strategy", "first_line", FIRST_LINE)
    module = study.write("metrics", "broken_setup", SETUP_RAISES)
    line = one_line(study.run("strategy=first_line", "metrics=broken_setup"))
    where = f"{module}:{line_of(SETUP_RAISES, 'return {')}"
    assert line == (
        f"error: metric 'broken_setup' ({where}) raised KeyError: 'ration'; "
        "fix the metric's code (verbose=true prints the traceback)"
    )
    assert study.runs() == []  # set up before the run exists: nothing a report could count


@pytest.mark.parametrize("flag", ["verbose=true", "hydra.verbose=true"])
def test_verbose_prints_the_traceback_behind_the_line(study: Study, flag: str) -> None:
    study.write("strategy", "plain", RETURNS_STR)
    done = study.run("strategy=plain", "metrics=none", flag)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" in done.stderr and "PluginContractBreach" in done.stderr
    assert any(line.startswith("error: strategy 'plain' (") for line in done.stderr.splitlines())


def test_a_sweep_reports_the_breach_of_its_job(study: Study) -> None:
    study.write("strategy", "first_line", FIRST_LINE)
    study.write("metrics", "ratio", MISNAMED)
    done = study.run("-m", "strategy=first_line", "metrics=ratio,none")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    runs = study.runs()
    failed = [r for r in runs if r.info.status == "FAILED"]
    assert len(runs) == 2 and len(failed) == 1, [(r.info.status, r.info.run_name) for r in runs]
    assert "metrics=ratio" in failed[0].info.run_name
    reason = failed[0].data.tags["failure"]
    assert "metric 'ratio'" in reason and "declares headline ratio" in reason
    assert "PluginContractBreach" in study.error_txt(failed[0])
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: 1 job(s) of the sweep failed") and "metric 'ratio'" in last


SECOND_RETURNS_STR = (
    STRATEGY
    + """


def summarize(chunks):
    if chunks[0].text.startswith("The Lighthouse"):  # the second sample story only
        return chunks[0].text[:200]
    return StrategyResult(summary=chunks[0].text[:200])
"""
)


def test_a_breach_stops_the_job_even_with_on_error_continue(study: Study) -> None:
    study.write("strategy", "second", SECOND_RETURNS_STR)
    line = one_line(study.run("strategy=second", "metrics=none", "on_error=continue", limit=2))
    assert line.startswith("error: strategy 'second' (") and "not a StrategyResult" in line
    failed_run(study, line)  # not FINISHED with that story left out: every story could break it
