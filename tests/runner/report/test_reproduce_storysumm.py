"""StorySumm's Results table, every "Full" row, reproduced through the CLI (issue 29).

The released predictions (``predicted_labels/``) enter as judged runs through ``metrics=given``
(one run per file, a sweep), people's labels through ``python -m runner.annotate import
storysumm.json``, and ``python -m runner.report meta=true`` prints the faithfulness table.
Each figure of ``meta_faithfulness.csv`` is compared with the number README.upstream.md
prints, to its printed precision (0.11 means 0.105..0.115; 70 means 69.5..70.5), read from
the README's own table rather than copied here.

The "Val/Test" rows (UniEval, AlignScore) are not reproduced: their files give a
probability and no label, and the table labels them by a threshold tuned for balanced
accuracy on the val split (``Results.ipynb``'s ``tune_thresh``); a ``given`` run of them
has no ``faithful`` value, so they have no row.

Slow (nine runs over 96 summaries): it runs under CI on ../shared and is skipped on a fresh
clone without it.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA, missing_shared

STORYSUMM = SHARED_DATA / "faithfulness" / "storysumm"
PREDICTED = STORYSUMM / "predicted_labels"
FILES = {  # the README's method -> the released predictions behind it (Results.ipynb)
    "Binary (Claude-3)": "claude-3-opus-20240229/justquestion.json",
    "Binary (GPT-4)": "gpt-4-0125-preview/justquestion.json",
    "Binary (Mixtral)": "mixtral/justquestion.json",
    "CoT (Claude-3)": "claude-3-opus-20240229/cot.json",
    "CoT (GPT-4)": "gpt-4-0125-preview/cot.json",
    "CoT (Mixtral)": "mixtral/cot.json",
    "FABLES": "fables-gpt-4-turbo-preview.json",
    "MiniCheck": "minicheck-flan-t5-large.json",
}
COLUMNS = {  # the README's column -> ours
    "Cohen's Kappa": "Cohen's kappa",
    "% Faithful": "% faithful",
    "Precision": "precision",
    "Recall": "recall",
    "% Easy": "% easy caught",
    "% Hard": "% hard caught",
    "Balanced Accuracy": "balanced accuracy %",
}


def readme_rows() -> dict[str, dict[str, str]]:
    """The README's "Full" rows: method -> column -> the number as printed."""
    lines = (STORYSUMM / "README.upstream.md").read_text(encoding="utf-8").splitlines()
    table = [line for line in lines if line.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    rows = {}
    for line in table[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        if cells["Split"] == "Full":
            rows[cells["Method"]] = cells
    return rows


def cli(cwd: Path, *args: str) -> str:
    """Run ``python -m <args>`` in ``cwd`` (MLflow's artifacts land there); its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def given_args() -> list[str]:
    """``metrics=given``; by import path when this venv's metadata predates its entry point."""
    names = {e.name for e in entry_points(group="summarization_runner.metrics")}
    return ["metrics=given"] + (
        [] if "given" in names else ["+metrics.given.name=metrics.faithfulness.given"]
    )


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, str]], str]:
    """The report's faithfulness rows (rater param -> CSV row) and its printed text."""
    if not (STORYSUMM / "storysumm.json").exists():
        missing_shared("faithfulness/storysumm")
    tmp = tmp_path_factory.mktemp("storysumm")
    store = [f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}", "tracking.experiment=storysumm"]
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    data = STORYSUMM / "storysumm.json"
    cli(
        tmp,
        "runner.annotate",
        "import",
        str(data),
        "--tracking-uri",
        uri,
        "--experiment",
        "storysumm",
        "--create-experiment",
    )
    paths = ",".join(str(PREDICTED / f) for f in FILES.values())
    sweep = ["-m", "strategy=none", "data=storysumm", f"data.path={data}", *given_args()]
    cli(tmp, "runner", *sweep, f"metrics.given.path={paths}", *store, f"cache.dir={tmp / 'cache'}")
    printed = cli(tmp, "runner.report", "meta=true", *store, f"out={tmp / 'out'}", "resamples=200")
    with (tmp / "out" / "meta_faithfulness.csv").open(encoding="utf-8") as f:
        rows = {row["method"]: row for row in csv.DictReader(f)}
    return rows, printed


def decimals(printed: str) -> int:
    return len(printed.split(".")[1]) if "." in printed else 0


@pytest.mark.parametrize("method", list(FILES))
def test_full_row_reproduces(
    method: str, reproduced: tuple[dict[str, dict[str, str]], str]
) -> None:
    rows, _ = reproduced
    expected = readme_rows()[method]
    path = PREDICTED / FILES[method]
    ours = rows[f"{path.parent.name}/{path.stem}"]  # given's default rater: folder/stem
    assert ours["summaries"] == "96"
    for theirs, mine in COLUMNS.items():
        printed = expected[theirs]
        value = float(ours[mine])
        half = 0.5 * 10 ** -decimals(printed) + 1e-9
        assert abs(value - float(printed)) <= half, f"{method} {theirs}: {value} vs {printed}"


def test_the_report_prints_the_table(reproduced: tuple[dict[str, dict[str, str]], str]) -> None:
    _, printed = reproduced
    assert "## Faithfulness: summaries" in printed
    section = printed.split("## Faithfulness: summaries")[1]  # the main table names it too
    line = next(x for x in section.splitlines() if "gpt-4-0125-preview/justquestion" in x)
    # the example row: kappa 0.11, 70% faithful, precision 0.42, recall 0.78, easy
    # 55.0, hard 25.0, balanced accuracy 56.4 (each with its interval)
    for figure in ("0.109 [", "69.8 [", "0.418 [", "0.778 [", "55.0 [", "25.0 [", "56.4 ["):
        assert figure in line
