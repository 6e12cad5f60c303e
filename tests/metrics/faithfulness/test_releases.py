"""StorySumm's and FABLES' releases read as published: values, the one repair, each error.

Expectations come from the fixtures' raw JSON (or the real release's, under CI) read here
with ``json`` and ``zipfile``, never through the module under test.
"""

from __future__ import annotations

import collections
import json
import zipfile
from pathlib import Path

import pytest

from metrics.faithfulness.releases import read_fables, read_storysumm
from runner.api import DataError, HumanDataError
from tests.conftest import SHARED_DATA, missing_shared

FIXTURES = Path(__file__).parent / "fixtures"
STORYSUMM = FIXTURES / "storysumm_3.json"
FABLES = FIXTURES / "fables_2.json"
RELEASE = SHARED_DATA / "faithfulness"


def stray_line(text: str) -> int:
    """The 1-based line that ends with the stray ``", "`` (found here by hand)."""
    (number,) = [i + 1 for i, line in enumerate(text.split("\n")) if line.endswith('", "')]
    return number


def repaired(text: str) -> dict:
    """The fixture parsed after removing the stray quote by hand."""
    return json.loads(text.replace('", "\n', '",\n'))


def zipped(json_file: Path, folder: Path, macosx: bool = True) -> Path:
    """``json_file`` as the release zips it: FABLES.json, plus a resource-fork copy."""
    path = folder / "FABLES.json.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(json_file, "FABLES.json")
        if macosx:
            archive.writestr("__MACOSX/._FABLES.json", b"\x00\x05\x16\x07 not json")
    return path


def test_the_storysumm_fixture_really_has_the_releases_typo() -> None:
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(STORYSUMM.read_text())


def test_storysumm_is_read_with_one_note_naming_the_repaired_line() -> None:
    text = STORYSUMM.read_text()
    raw = repaired(text)
    entries, notes = read_storysumm(STORYSUMM)
    assert notes == [
        f"storysumm_3.json line {stray_line(text)}: removed a stray '\", \"' before the line "
        "break (the release's typo)"
    ]
    assert [e.key for e in entries] == list(raw)
    for entry in entries:
        r = raw[entry.key]
        assert entry.story == r["story"] and entry.sentences == tuple(r["summary"])
        assert entry.summary == " ".join(r["summary"])
        assert entry.label == r["label"] and entry.difficulty == r["difficulty"]
        assert entry.errors == tuple(r["errors"]) and entry.claims == tuple(r["claims"])
        assert entry.explanations == tuple(r["explanations"])
        assert (entry.model, entry.split, entry.story_id) == (
            r["model"],
            r["split"],
            str(r["story-id"]),
        )
    # the repaired sentence is whole, not split into two
    assert entries[0].sentences[1] == "She uses it to open the shed."


def test_a_well_formed_storysumm_file_has_no_note(tmp_path: Path) -> None:
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(repaired(STORYSUMM.read_text())))
    entries, notes = read_storysumm(clean)
    assert len(entries) == 3 and notes == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the stray quote after the last element: the repair would leave a trailing comma
        ('"She takes out her bicycle."\n', '"She takes out her bicycle.", "\n'),
        # the same pattern after an object's value (not an array's element)
        ('"difficulty": "easy",\n', '"difficulty": "easy", "\n'),
        # a missing comma
        ('"errors": [\n            0,', '"errors": [\n            0'),
    ],
)
def test_a_file_broken_otherwise_is_one_line_naming_its_line(
    tmp_path: Path, old: str, new: str
) -> None:
    text = STORYSUMM.read_text()
    assert old in text
    broken = tmp_path / "storysumm.json"
    broken.write_text(text.replace(old, new, 1))
    with pytest.raises(DataError, match=r"storysumm.json: not valid JSON at line \d+") as err:
        read_storysumm(broken)
    assert "\n" not in str(err.value)


def test_a_storysumm_summary_without_a_field_is_named(tmp_path: Path) -> None:
    raw = repaired(STORYSUMM.read_text())
    del raw["s2"]["errors"]
    bad = tmp_path / "storysumm.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(DataError, match="summary s2 has no field 'errors'"):
        read_storysumm(bad)
    with pytest.raises(HumanDataError):
        read_storysumm(bad, HumanDataError)


def test_a_missing_storysumm_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        read_storysumm(tmp_path / "nope.json")


def test_fables_json_and_zip_read_the_same_summaries_in_claim_order(tmp_path: Path) -> None:
    raw = json.loads(FABLES.read_text())["FABLES"]
    from_json = read_fables(FABLES)
    assert read_fables(zipped(FABLES, tmp_path)) == from_json
    expected = [(t, m) for t, models in raw.items() for m in models]
    assert [(s.title, s.model) for s in from_json] == expected
    for s in from_json:
        r = raw[s.title][s.model]
        assert s.doc_id == f"{s.title} -- {s.model}"
        assert s.summary == r["summary"] and s.comment == r["general_comment"]
        keys = sorted(r["claims"], key=int)
        assert [c.claim for c in s.claims] == [r["claims"][k]["claim"] for k in keys]
        assert [c.label for c in s.claims] == [r["claims"][k]["label"] for k in keys]
        assert [c.evidence for c in s.claims] == [tuple(r["claims"][k]["evidence"]) for k in keys]
        assert [c.reason for c in s.claims] == [tuple(r["claims"][k]["reason"]) for k in keys]
    # the fixture lists claim "1" before "0": index order, not file order
    assert from_json[0].claims[0].claim == "Mara leaves the village."


@pytest.mark.parametrize("content", [b"just some text", b'{"doc": "a summary"}', b"[1, 2]"])
def test_a_file_of_neither_fables_format_names_what_was_expected(
    tmp_path: Path, content: bytes
) -> None:
    other = tmp_path / "other.json"
    other.write_bytes(content)
    with pytest.raises(DataError, match="expected the FABLES release: FABLES.json.zip") as err:
        read_fables(other)
    assert "\n" not in str(err.value)


def test_a_zip_without_fables_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("__MACOSX/._FABLES.json", "x")
        archive.writestr("notes.txt", "x")
    with pytest.raises(DataError, match="the zip holds no FABLES.json"):
        read_fables(path)


def test_a_claim_label_outside_the_four_names_title_model_index_and_the_four(
    tmp_path: Path,
) -> None:
    raw = json.loads(FABLES.read_text())
    raw["FABLES"]["The Small Book"]["MIXTRAL"]["claims"]["0"]["label"] = "Maybe"
    bad = tmp_path / "FABLES.json"
    bad.write_text(json.dumps(raw))
    message = (
        "claim 0 of 'The Small Book' by MIXTRAL has label 'Maybe'; "
        "a FABLES label is one of Yes, No, PartialSupport, Inapplicable"
    )
    with pytest.raises(DataError, match=message):
        read_fables(bad)
    with pytest.raises(HumanDataError, match=message):
        read_fables(zipped(bad, tmp_path), HumanDataError)


@pytest.mark.parametrize("field", ["claim", "label", "evidence", "reason"])
def test_a_claim_without_a_field_is_named(tmp_path: Path, field: str) -> None:
    raw = json.loads(FABLES.read_text())
    del raw["FABLES"]["The Small Book"]["GPT-4"]["claims"]["2"][field]
    bad = tmp_path / "FABLES.json"
    bad.write_text(json.dumps(raw))
    message = f"claim 2 of 'The Small Book' by GPT-4 has no field '{field}'"
    with pytest.raises(DataError, match=message):
        read_fables(bad)


def test_a_summary_without_its_text_is_named(tmp_path: Path) -> None:
    raw = json.loads(FABLES.read_text())
    del raw["FABLES"]["The Small Book"]["MIXTRAL"]["summary"]
    bad = tmp_path / "FABLES.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(DataError, match="'The Small Book' by MIXTRAL has no field 'summary'"):
        read_fables(bad)


def test_the_storysumm_release_as_published() -> None:
    path = RELEASE / "storysumm" / "storysumm.json"
    if not path.exists():
        missing_shared("StorySumm release")
    text = path.read_text(encoding="utf-8")
    raw = repaired(text)
    entries, notes = read_storysumm(path)
    assert len(entries) == len(raw) == 96
    assert notes == [
        f"storysumm.json line {stray_line(text)}: removed a stray '\", \"' before the line "
        "break (the release's typo)"
    ]
    assert stray_line(text) == 1455
    assert [e.label for e in entries] == [r["label"] for r in raw.values()]
    assert [e.sentences for e in entries] == [tuple(r["summary"]) for r in raw.values()]


def test_the_fables_release_counts() -> None:
    path = RELEASE / "fables" / "FABLES.json.zip"
    if not path.exists():
        missing_shared("FABLES release")
    with zipfile.ZipFile(path) as archive:
        raw = json.loads(archive.read("FABLES.json"))["FABLES"]
    labels = collections.Counter(
        c["label"] for models in raw.values() for s in models.values() for c in s["claims"].values()
    )
    assert labels == {"Yes": 2422, "PartialSupport": 419, "No": 247, "Inapplicable": 70}
    summaries = read_fables(path)
    assert len(summaries) == 130
    assert sum(len(s.claims) for s in summaries) == 3158
    assert collections.Counter(c.label for s in summaries for c in s.claims) == labels
    assert len({s.doc_id for s in summaries}) == 130
