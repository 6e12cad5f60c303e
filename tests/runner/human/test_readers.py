"""The authors' files, the plain table, human BooookScore and the tallies, on small files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from metrics.booookscore.human import booookscore, mean_booookscore
from runner.human.authors import read_author_annotations, read_summaries, read_validation_sample
from runner.human.judgments import (
    CoherenceAnnotation,
    HumanDataError,
    Preference,
    Rating,
    Relation,
    Span,
    Verdict,
)
from runner.human.table import read_table
from runner.human.tally import Precision, precision, preference_counts

SUMMARY = "Anna leaves home. She finds work. Her mother writes. She goes home."


def authors_file(tmp_path: Path, **changes: Any) -> Path:
    book = {
        "summary": SUMMARY,
        "singles": [
            {
                "id": "x",
                "span": "She finds work.",
                "questions": "Where?",
                "labels": ["causal omission"],
            }
        ],
        "relations": [
            {
                "id_a": "a",
                "id_b": "b",
                "span_a": "Anna leaves home.",
                "span_b": "Her mother\nwrites.",
                "shared_questions": "Why?",
                "same": True,
                "shared_labels": ["discontinuity"],
            }
        ],
        **changes,
    }
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps({"a-book": book}), encoding="utf-8")
    return path


def raises_one_line(call: Any, *parts: str) -> None:
    with pytest.raises(HumanDataError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)


def test_authors_annotations_and_their_booookscore(tmp_path: Path) -> None:
    path = authors_file(tmp_path)
    (annotation,) = read_author_annotations(path, system="hier", annotator="authors")
    assert annotation == CoherenceAnnotation(
        "a-book",
        "hier",
        "authors",
        SUMMARY,
        (Span("She finds work.", "Where?", ("causal omission",)),),
        (
            Relation(
                Span("Anna leaves home."), Span("Her mother\nwrites."), "Why?", ("discontinuity",)
            ),
        ),
    )
    # 4 sentences, 1 single + 1 relation flagged (footnote 12): 100 x (1 - 2/4)
    assert booookscore(annotation) == 50.0
    clean = CoherenceAnnotation("b", "hier", "authors", "One. Two.")
    assert mean_booookscore([annotation, clean]) == 75.0
    assert read_summaries(path) == {"a-book": SUMMARY}


def test_authors_file_bad_cases(tmp_path: Path) -> None:
    def read(path: Path) -> Any:
        return lambda: read_author_annotations(path, "hier", "authors")

    path = authors_file(tmp_path, singles=[{"span": "She finds work.", "labels": ["boring"]}])
    raises_one_line(read(path), str(path), "book 'a-book'", "'labels'", "'boring'")
    path = authors_file(tmp_path, relations=[{"span_a": "Anna leaves home.", "span_b": "Bob."}])
    raises_one_line(read(path), str(path), "book 'a-book'", "'span_b'", "not in the summary")
    path = authors_file(tmp_path, summary=None)
    raises_one_line(read(path), str(path), "book 'a-book'", "'summary'", "not a string")
    path.write_text("[]", encoding="utf-8")
    raises_one_line(read(path), str(path), "{book: ...}")
    raises_one_line(lambda: mean_booookscore([]), "no coherence annotation")
    empty = CoherenceAnnotation("c", "hier", "authors", "  ")
    raises_one_line(lambda: booookscore(empty), "book 'c'", "'summary'", "no sentence")


def test_validation_sample_verdicts(tmp_path: Path) -> None:
    sample = {
        "a-book": {
            "summary": SUMMARY,
            "annotations": [
                {
                    "source": "human",
                    "anno": {"span": "She finds work.", "questions": "Where?"},
                    "agreement": "Agree",
                    "reasons": None,
                    "explanation": None,
                },
                {
                    "source": "model",
                    "anno": {"span": "Anna leaves home."},
                    "agreement": "Don't agree",
                    "reasons": ["A. wrong"],
                    "explanation": "it is clear",
                },
                {
                    "source": "model",
                    "anno": {"span": "She goes home."},
                    "agreement": "Partially agree",
                    "reasons": [],
                    "explanation": None,
                },
            ],
        }
    }
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(sample), encoding="utf-8")
    verdicts = read_validation_sample(path)
    assert verdicts[1] == Verdict(
        "a-book", "model", {"span": "Anna leaves home."}, "Don't agree", "", "A. wrong; it is clear"
    )
    found = precision(verdicts)
    assert [(p.source, p.agreed, p.total) for p in found.values()] == [
        ("human", 1, 1),
        ("model", 1, 2),
    ]
    assert found["model"].value == 0.5
    sample["a-book"]["annotations"][0]["agreement"] = "Yes"  # type: ignore[index]
    path.write_text(json.dumps(sample), encoding="utf-8")
    raises_one_line(lambda: read_validation_sample(path), str(path), "'agreement'", "'Yes'")


def test_preference_counts_and_a_pair_not_asked_for() -> None:
    def pref(book: str, systems: tuple[str, str], winner: str, **flags: bool) -> Preference:
        choices = dict.fromkeys(("detail", "structure", "logic", "preference"), winner)
        return Preference(
            book, systems, "1", choices, {k.replace("_", ":"): v for k, v in flags.items()}
        )

    prefs = [
        pref("a", ("inc", "hier"), "inc", contradiction=True, omission_hier=True),
        pref("b", ("hier", "inc"), "draw", omission_hier=True, omission_inc=False),
    ]
    counts = preference_counts(prefs, ("inc", "hier"))
    assert counts.comparisons == 2
    assert counts.as_table4() == {
        "Detail": {"inc": 1, "hier": 0, "draw": 1},
        "Structure": {"inc": 1, "hier": 0, "draw": 1},
        "Logic": {"inc": 1, "hier": 0, "draw": 1},
        "Preference": {"inc": 1, "hier": 0, "draw": 1},
        "Contradiction": 1,
        "Inc Omission": 0,
        "Hier Omission": 2,
    }
    raises_one_line(
        lambda: preference_counts(prefs, ("inc", "other")),
        "book 'a'",
        "'systems'",
        "['inc', 'hier']",
    )
    no_logic = Preference("c", ("inc", "hier"), "1", {"detail": "inc"})
    raises_one_line(
        lambda: preference_counts([no_logic], ("inc", "hier")), "book 'c'", "'structure'"
    )


CSV_HEADER = "document,system,criterion,value,annotator\n"


def test_table_csv_and_jsonl(tmp_path: Path) -> None:
    csv_path = tmp_path / "ratings.csv"
    csv_path.write_text(
        CSV_HEADER + "a,run1,fluency,4,ann1\na,run1,fluency, 5 ,ann2\na,hier,verdict,good,ann1\n",
        encoding="utf-8",
    )
    assert read_table(csv_path) == [
        Rating("a", "run1", "fluency", 4.0, "ann1"),
        Rating("a", "run1", "fluency", 5.0, "ann2"),
        Rating("a", "hier", "verdict", "good", "ann1"),
    ]
    jsonl = tmp_path / "ratings.jsonl"
    rows = [
        {
            "document": "a",
            "system": "hier",
            "criterion": "fluency",
            "value": 3,
            "annotator": "x",
            "note": "ignored",
        },
        {"document": "b", "system": "hier", "criterion": "label", "value": "ok", "annotator": "x"},
    ]
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert read_table(jsonl) == [
        Rating("a", "hier", "fluency", 3.0, "x"),
        Rating("b", "hier", "label", "ok", "x"),
    ]


def test_table_bad_cases(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"

    def table(text: str, numeric: tuple[str, ...] = ()) -> Any:
        path.write_text(text, encoding="utf-8")
        return lambda: read_table(path, numeric)

    raises_one_line(
        table("document,system,value,annotator\na,b,3,c\n"),
        str(path),
        "header",
        "'criterion'",
        "document,system,criterion,value,annotator",
    )
    raises_one_line(
        table(CSV_HEADER + "a,run1,fluency,4,x\nb,run1,fluency,n/a,x\n"),
        str(path),
        "row 3 (book 'b')",
        "'value'",
        "'n/a' is not a number",
    )
    raises_one_line(
        table(CSV_HEADER + "a,run1,fluency,high,x\n", ("fluency",)), "row 2", "not a number"
    )
    raises_one_line(
        table(CSV_HEADER + "a,run1,fluency,4,x\na,run1,fluency,5,x\n"),
        "row 3",
        "a second 'fluency' value of run1 by x",
    )
    raises_one_line(
        table(CSV_HEADER + "a,,fluency,4,x\n"), "row 2 (book 'a')", "'system'", "is empty"
    )
    raises_one_line(
        table(CSV_HEADER + "a,run1,fluency,nan,x\nb,run1,fluency,4,x\n"),
        "row 2",
        "'nan' is not a number",
    )
    raises_one_line(table(CSV_HEADER), str(path), "has no rows")
    jsonl = tmp_path / "ratings.jsonl"
    jsonl.write_text('{"document": "a"}\n{oops\n', encoding="utf-8")
    raises_one_line(lambda: read_table(jsonl), str(jsonl), "row 1", "'system'", "missing column")
    jsonl.write_text("{oops\n", encoding="utf-8")
    raises_one_line(lambda: read_table(jsonl), str(jsonl), "row 1", "not JSON")
    assert precision([]) == {}
    assert math.isnan(Precision("x", 0, 0).value)
