"""A misnamed Label Studio field stops the import (issue 31, case 3): exit 2, one line, no run.

A coherence export whose Labels control is ``error_types`` (the labeling config says
``error_type``), or whose value says ``label`` for ``labels``, was imported with exit 0 as
spans with no error types.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.annotate.__main__ import main
from runner.tracking.reader import find_runs
from tests.runner.annotate.conftest import HIER


def _export_with(store: dict[str, str], tmp_path: Path, control: str, key: str) -> list[str]:
    """Export the hier run's coherence tasks; answer each with one span as ``control``/``key``."""
    out = tmp_path / "tasks"
    args = ["export", "coherence", store["hier"], "--seed", "2", "--out", str(out)]
    assert main([*args, "--tracking-uri", store["uri"]]) == 0
    exported: list[dict[str, Any]] = []
    for number, item in enumerate(json.loads((out / "tasks.json").read_text()), 1):
        first = item["data"]["summary"].split(". ")[0] + "."
        value = {"start": 0, "end": len(first), "text": first, key: ["language"]}
        result = [{"id": "r", "from_name": control, "to_name": "summary",
                   "type": "labels", "value": value}]  # fmt: skip
        exported.append({"id": 40 + number, "data": item["data"],
                         "annotations": [{"completed_by": 7, "result": result}]})  # fmt: skip
    export = tmp_path / "export.json"
    export.write_text(json.dumps(exported))
    return ["import", str(export), "--key", str(out / "key.json"), "--tracking-uri", store["uri"]]


@pytest.mark.parametrize(
    ("control", "key", "field", "expects"),
    [
        ("error_types", "labels", "from_name", "unknown control 'error_types'; the coherence "
         "labeling config has error_type (Labels: value labels/start/end/text)"),
        ("error_type", "label", "value.label", "unknown key of control 'error_type'; the "
         "coherence labeling config's error_type (Labels: value labels/start/end/text)"),
    ],
)  # fmt: skip
def test_a_misnamed_field_is_one_line_exit_2_and_records_nothing(
    control: str,
    key: str,
    field: str,
    expects: str,
    fresh_store: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = _export_with(fresh_store, tmp_path, control, key)
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {tmp_path / 'export.json'}: task 41 (book 'doc-")
    assert f"field {field!r}: {expects}" in err
    assert "labeling-coherence.xml" in err
    kinds = [r.tags.get("runner.kind") for r in find_runs(fresh_store["uri"])]
    assert "human" not in kinds and len(kinds) == 2  # the two judged runs, nothing else


def test_the_right_names_import_with_their_error_types(
    fresh_store: dict[str, str], tmp_path: Path
) -> None:
    args = _export_with(fresh_store, tmp_path, "error_type", "labels")
    out = tmp_path / "judgments.jsonl"
    assert main([*args, "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == len(HIER)
    assert all(r["singles"][0]["labels"] == ["language"] for r in records)
