"""Builders of Label Studio export tasks, in the shape Label Studio's JSON export writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write(tmp_path: Path, tasks: list[dict[str, Any]], name: str = "export.json") -> Path:
    """The tasks as an export file."""
    path = tmp_path / name
    path.write_text(json.dumps(tasks), encoding="utf-8")
    return path


def task(tid: int, data: dict[str, Any], *annotations: dict[str, Any]) -> dict[str, Any]:
    """A task with its annotations (``annotation(...)``)."""
    return {"id": tid, "data": data, "annotations": list(annotations), "predictions": []}


def annotation(who: int, result: list[dict[str, Any]], cancelled: bool = False) -> dict[str, Any]:
    """One annotator's annotation of a task."""
    return {"id": who * 100, "completed_by": who, "was_cancelled": cancelled, "result": result}


def choices(**picked: str) -> list[dict[str, Any]]:
    """Choices results, control name -> the value picked."""
    return [
        {
            "id": f"c{n}",
            "from_name": name,
            "to_name": "summary_1",
            "type": "choices",
            "value": {"choices": [value]},
        }
        for n, (name, value) in enumerate(picked.items())
    ]


def textarea(name: str, text: str) -> dict[str, Any]:
    """A whole-task textarea result."""
    return {
        "id": f"t-{name}",
        "from_name": name,
        "to_name": "summary_1",
        "type": "textarea",
        "value": {"text": [text]},
    }


PAIRWISE = {
    "detail": "Summary 1",
    "structure": "Summary 2",
    "logic": "Draw",
    "preference": "Summary 2",
}


def region(
    rid: str, summary: str, text: str, labels: list[str], questions: str = ""
) -> list[dict[str, Any]]:
    """A span region (Labels ``error_type``) and its per-region ``questions`` textarea."""
    start = summary.find(text)
    start, end = (start, start + len(text)) if start >= 0 else (0, len(text))
    out: list[dict[str, Any]] = [
        {
            "id": rid,
            "from_name": "error_type",
            "to_name": "summary",
            "type": "labels",
            "value": {"start": start, "end": end, "text": text, "labels": labels},
        }
    ]
    if questions:
        out.append(
            {
                "id": rid,
                "from_name": "questions",
                "to_name": "summary",
                "type": "textarea",
                "value": {"start": start, "end": end, "text": [questions]},
            }
        )
    return out


def relation(first: str, second: str) -> dict[str, Any]:
    """Label Studio's relation between two regions."""
    return {"type": "relation", "from_id": first, "to_id": second, "direction": "right"}
