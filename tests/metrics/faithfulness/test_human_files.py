"""People's labels in StorySumm's and FABLES' releases, recognized by shape and read as judgments.

Expected judgments are built here from the fixtures' raw JSON (or the real releases', under
CI) with ``json`` and ``zipfile``, never through the readers under test.
"""

from __future__ import annotations

import collections
import json
import zipfile
from pathlib import Path

import pytest

import metrics.faithfulness
from metrics.faithfulness.human import (
    HUMAN_FILES,
    read_fables_judgments,
    read_storysumm_judgments,
    recognizes_fables,
    recognizes_storysumm,
)
from runner.api import ClaimLabel, ClaimsJudgment, HumanDataError
from tests.conftest import SHARED_DATA, missing_shared
from tests.metrics.faithfulness.test_releases import FABLES, STORYSUMM, repaired, zipped

MAPPED = {"Yes": "supported", "PartialSupport": "partial", "No": "unsupported"}
MAPPED["Inapplicable"] = "cannot_tell"


def test_the_metric_declares_both_release_formats() -> None:
    assert [f.name for f in metrics.faithfulness.HUMAN_FILES] == [
        "StorySumm release",
        "FABLES release",
    ]
    assert metrics.faithfulness.HUMAN_FILES is HUMAN_FILES


def test_each_format_recognizes_its_own_shape_only(tmp_path: Path) -> None:
    fables_zip = zipped(FABLES, tmp_path)
    assert recognizes_storysumm(STORYSUMM) and not recognizes_fables(STORYSUMM)
    assert recognizes_fables(FABLES) and not recognizes_storysumm(FABLES)
    assert recognizes_fables(fables_zip) and not recognizes_storysumm(fables_zip)
    summaries = tmp_path / "summaries.json"
    summaries.write_text(json.dumps({"doc": "a summary", "other": "another"}))
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)))
    for other in (summaries, binary, tmp_path / "absent.json", tmp_path):
        assert not recognizes_storysumm(other) and not recognizes_fables(other)


def test_a_storysumm_file_broken_otherwise_is_not_recognized(tmp_path: Path) -> None:
    broken = tmp_path / "storysumm.json"
    broken.write_text(STORYSUMM.read_text().replace('"errors": [', '"errors" [', 1))
    assert not recognizes_storysumm(broken)


def test_storysumm_gives_labels_difficulty_and_sentences_with_explanations() -> None:
    raw = repaired(STORYSUMM.read_text())
    judgments, notes = read_storysumm_judgments(STORYSUMM)
    assert len(notes) == 1 and "removed a stray" in notes[0]
    expected = []
    for key, r in raw.items():
        reasons = iter(r["explanations"])
        sentences = tuple(
            ClaimLabel(
                i,
                text,
                "supported" if error else "unsupported",
                reason="" if error else next(reasons),
            )
            for i, (text, error) in enumerate(zip(r["summary"], r["errors"], strict=True))
        )
        expected.append(
            ClaimsJudgment(
                doc_id=key,
                system=r["model"],
                annotator="storysumm",
                summary=" ".join(r["summary"]),
                faithful=r["label"] == 1,
                difficulty=r["difficulty"],
                claims=sentences,
                unit="sentence",
                metric="faithfulness",
            )
        )
    assert judgments == expected
    # by hand: s2's two wrong sentences carry their explanations, in order
    s2 = judgments[1]
    assert [(c.label, c.reason) for c in s2.claims] == [
        ("unsupported", "He bakes on Sunday, not Saturday."),
        ("unsupported", "His sister eats the last slice."),
        ("supported", ""),
    ]
    assert s2.faithful is False and s2.difficulty == "easy"


def test_explanations_that_do_not_match_the_wrong_sentences_are_noted_not_misaligned(
    tmp_path: Path,
) -> None:
    raw = repaired(STORYSUMM.read_text())
    raw["s3"]["errors"] = [1, 1]  # as one release summary: no wrong sentence, one explanation
    raw["s1"]["errors"] = [1, 1]  # as another: three sentences, two labels
    path = tmp_path / "storysumm.json"
    path.write_text(json.dumps(raw))
    judgments, notes = read_storysumm_judgments(path)
    by_key = {j.doc_id: j for j in judgments}
    assert all(c.reason == "" for c in by_key["s3"].claims)
    assert len(by_key["s1"].claims) == 2
    assert notes == [
        "StorySumm s1: 3 sentences but 2 sentence labels; only the first 2 are labelled",
        "StorySumm s3: 0 inconsistent sentences but 1 explanations; explanations not attached",
    ]


def test_fables_gives_claim_labels_with_evidence_and_reasons(tmp_path: Path) -> None:
    raw = json.loads(FABLES.read_text())["FABLES"]
    expected = []
    for title, models in raw.items():
        for model, s in models.items():
            claims = tuple(
                ClaimLabel(
                    i,
                    s["claims"][k]["claim"],
                    MAPPED[s["claims"][k]["label"]],
                    tuple(s["claims"][k]["evidence"]),
                    "\n".join(r for r in s["claims"][k]["reason"] if r),
                )
                for i, k in enumerate(sorted(s["claims"], key=int))
            )
            expected.append(
                ClaimsJudgment(
                    f"{title} -- {model}",
                    model,
                    "fables",
                    s["summary"],
                    None,
                    "",
                    claims,
                    "claim",
                    "faithfulness",
                )
            )
    assert read_fables_judgments(FABLES) == (expected, [])
    assert read_fables_judgments(zipped(FABLES, tmp_path)) == (expected, [])
    # by hand: the partial claim keeps its one non-empty reason
    partial = expected[0].claims[1]
    assert (partial.label, partial.reason) == ("partial", "A raft, not a boat.")


def test_a_bad_fables_label_is_a_human_data_error(tmp_path: Path) -> None:
    raw = json.loads(FABLES.read_text())
    raw["FABLES"]["The Small Book"]["GPT-4"]["claims"]["2"]["label"] = "yes"
    path = tmp_path / "FABLES.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(HumanDataError, match="claim 2 of 'The Small Book' by GPT-4"):
        read_fables_judgments(path)


def test_a_storysumm_summary_missing_its_label_is_a_human_data_error(tmp_path: Path) -> None:
    raw = repaired(STORYSUMM.read_text())
    del raw["s1"]["errors"]
    path = tmp_path / "storysumm.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(HumanDataError, match="summary s1 has no field 'errors'"):
        read_storysumm_judgments(path)


def test_the_storysumm_release_judgments() -> None:
    path = SHARED_DATA / "faithfulness" / "storysumm" / "storysumm.json"
    if not path.exists():
        missing_shared("StorySumm release")
    raw = repaired(path.read_text(encoding="utf-8"))
    assert recognizes_storysumm(path) and not recognizes_fables(path)
    judgments, notes = read_storysumm_judgments(path)
    assert len(judgments) == 96
    assert sum(j.faithful for j in judgments) == sum(r["label"] for r in raw.values())
    assert [j.difficulty for j in judgments] == [r["difficulty"] for r in raw.values()]
    assert notes[0].startswith("storysumm.json line 1455: removed a stray")
    mismatched = [
        k
        for k, r in raw.items()
        if r["errors"].count(0) != len(r["explanations"]) or len(r["errors"]) != len(r["summary"])
    ]
    assert len(notes) == 1 + len(mismatched)
    assert all(any(k in n for n in notes) for k in mismatched)


def test_the_fables_release_judgments() -> None:
    path = SHARED_DATA / "faithfulness" / "fables" / "FABLES.json.zip"
    if not path.exists():
        missing_shared("FABLES release")
    with zipfile.ZipFile(path) as archive:
        raw = json.loads(archive.read("FABLES.json"))["FABLES"]
    labels = collections.Counter(
        MAPPED[c["label"]]
        for models in raw.values()
        for s in models.values()
        for c in s["claims"].values()
    )
    assert recognizes_fables(path) and not recognizes_storysumm(path)
    judgments, _ = read_fables_judgments(path)
    assert len(judgments) == 130
    assert collections.Counter(c.label for j in judgments for c in j.claims) == labels
    assert labels == {"supported": 2422, "partial": 419, "unsupported": 247, "cannot_tell": 70}
