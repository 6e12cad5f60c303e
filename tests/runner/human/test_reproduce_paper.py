"""The BooookScore paper's human figures, recomputed from the authors' released files.

Each is compared with the published number (../shared/data/README.md, booookscore/human/),
never with this code's own earlier output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metrics.booookscore.human import mean_booookscore
from runner.human.authors import read_author_annotations, read_summaries, read_validation_sample
from runner.human.judgments import Preference
from runner.human.labelstudio import read_labelstudio
from runner.human.tally import precision, preference_counts
from tests.conftest import SHARED_DATA, missing_shared

HUMAN = SHARED_DATA / "booookscore" / "human"


@pytest.fixture(scope="module")
def human() -> Path:
    if not HUMAN.is_dir():
        missing_shared("BooookScore human-judgment reproduction")
    return HUMAN


def test_human_booookscore_of_gpt4_hierarchical_is_89_4(human: Path) -> None:
    annotations = read_author_annotations(
        human / "gpt4-4096-hier.human-annotations.json", system="hier", annotator="authors"
    )
    assert len(annotations) == 100
    # Sec. 4: "Using human annotations ... yields a BooookScore of ... 89.4 for ... hierarchical"
    assert round(mean_booookscore(annotations), 1) == 89.4


def test_appendix_j_precision_human_86_of_113_model_35_of_58(human: Path) -> None:
    found = precision(read_validation_sample(human / "validation-sample.json"))
    assert {s: (p.agreed, p.total) for s, p in found.items()} == {
        "human": (86, 113),
        "model": (35, 58),
    }


def test_table_4_annotator_1_counts_from_the_label_studio_export(human: Path) -> None:
    candidates = {
        "hier": read_summaries(human / "gpt4-4096-hier.human-annotations.json"),
        "inc": read_summaries(human / "gpt4-4096-inc.summaries-annotator1-books.json"),
    }
    judgments, unmatched = read_labelstudio(
        human / "preference-formal-annotator1.labelstudio.json",
        None,
        candidates,
        kind="preference",
    )
    assert unmatched == []
    preferences = [j for j in judgments if isinstance(j, Preference)]
    assert len(preferences) == 20
    published = json.loads((human / "preference-formal-annotator1.counts.json").read_text())
    assert preference_counts(preferences, ("inc", "hier")).as_table4() == published
    assert published["Detail"] == {"inc": 15, "hier": 4, "draw": 1}
