"""FABLES' faithfulness per summarizer, from the release, through the CLI (issue 29).

``python -m runner.annotate import FABLES.json.zip`` records people's claim labels and
``python -m runner.report meta=true`` prints their shares per summarizer
(``meta_faithfulness_systems.csv``). The definition that reproduces the paper: the % of a
summarizer's claims labelled Yes among ALL its claims (Inapplicable and PartialSupport in
the denominator), pooled over its 26 summaries. It gives Claude-3-Opus 89.1, GPT-4 78.2,
GPT-4-Turbo 77.6, GPT-3.5-Turbo 71.5, Mixtral 68.7; the paper prints 90, 78, 78, 72 and 70:
at most 1.3 points apart (Mixtral), within 1.5 here. The alternatives are further off:
Inapplicable left out of the denominator gives GPT-3.5-Turbo 74.6 (2.6 off); the mean of
per-summary shares gives Claude-3-Opus 87.2 (2.8 off). The table's figures are also
compared exactly with the same shares computed here from the raw zip.

Runs under CI on ../shared; skipped on a fresh clone without it.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import zipfile
from collections import Counter

import pytest

from tests.conftest import SHARED_DATA, missing_shared

ZIP = SHARED_DATA / "faithfulness" / "fables" / "FABLES.json.zip"
PAPER = {  # FABLES (Kim et al. 2024): % of claims faithful per summarizer, as printed
    "CLAUDE-3-OPUS": 90.0,
    "GPT-4": 78.0,
    "GPT-4-TURBO": 78.0,
    "GPT-3.5-TURBO": 72.0,
    "MIXTRAL": 70.0,
}
TOLERANCE = 1.5
"""Points between our definition's figure and the paper's printed one (largest: 1.3)."""


def raw_labels() -> dict[str, Counter[str]]:
    """Summarizer -> its claims' labels as the release gives them (Yes, No, ...)."""
    with zipfile.ZipFile(ZIP) as z:
        release = json.loads(z.read("FABLES.json"))["FABLES"]
    out: dict[str, Counter[str]] = {}
    for models in release.values():
        for model, entry in models.items():
            out.setdefault(model, Counter()).update(c["label"] for c in entry["claims"].values())
    return out


@pytest.fixture(scope="module")
def per_summarizer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """The report's people's claim labels per summarizer: system -> CSV row."""
    if not ZIP.exists():
        missing_shared("faithfulness/fables/FABLES.json.zip")
    tmp = tmp_path_factory.mktemp("fables")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    for args in (
        [
            "runner.annotate",
            "import",
            str(ZIP),
            "--tracking-uri",
            uri,
            "--experiment",
            "fables",
            "--create-experiment",
        ],
        [
            "runner.report",
            "meta=true",
            f"tracking.uri={uri}",
            "tracking.experiment=fables",
            f"out={tmp / 'out'}",
            "resamples=200",
        ],
    ):
        done = subprocess.run(
            [sys.executable, "-m", *args],
            cwd=tmp,  # MLflow's artifacts land in the working folder
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ},
        )
        assert done.returncode == 0, done.stderr[-3000:]
    assert "## Faithfulness per summarizer (people)" in done.stdout
    with (tmp / "out" / "meta_faithfulness_systems.csv").open(encoding="utf-8") as f:
        return {row["system"]: row for row in csv.DictReader(f)}


def test_shares_match_the_raw_release(per_summarizer: dict[str, dict[str, str]]) -> None:
    raw = raw_labels()
    names = {"% supported": "Yes", "% partial": "PartialSupport", "% unsupported": "No"}
    names["% cannot_tell"] = "Inapplicable"
    assert set(per_summarizer) == set(raw) == set(PAPER)
    for model, labels in raw.items():
        row = per_summarizer[model]
        total = sum(labels.values())
        assert (int(row["summaries"]), int(row["claims"])) == (26, total)
        for column, label in names.items():
            assert float(row[column]) == pytest.approx(100 * labels[label] / total)
            assert float(row[f"{column}_low"]) <= float(row[column]) <= float(row[f"{column}_high"])


def test_supported_share_is_the_papers_within_the_stated_difference(
    per_summarizer: dict[str, dict[str, str]],
) -> None:
    ours = {model: float(row["% supported"]) for model, row in per_summarizer.items()}
    assert ours == pytest.approx(
        {
            "CLAUDE-3-OPUS": 89.1,
            "GPT-4": 78.2,
            "GPT-4-TURBO": 77.6,
            "GPT-3.5-TURBO": 71.5,
            "MIXTRAL": 68.7,
        },
        abs=0.05,
    )
    for model, printed in PAPER.items():
        assert abs(ours[model] - printed) <= TOLERANCE, (model, ours[model], printed)
    order = sorted(ours, key=ours.__getitem__, reverse=True)
    assert order[0] == "CLAUDE-3-OPUS" and order[-1] == "MIXTRAL"  # the paper's ranking ends
