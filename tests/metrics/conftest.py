"""Fixtures for metric tests: the released BooookScore files and a loopback judge."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.conftest import missing_shared  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RELEASED = REPO.parent / "shared" / "data" / "booookscore"
_SENTENCE = re.compile(r"\[Your sentence\]\n(.*?)\n\[Your response\]", re.DOTALL)


def released(name: str) -> tuple[Path, dict[str, str], dict[str, Any]]:
    """(summaries file, summaries, annotations) of a released configuration, or skip."""
    summaries = RELEASED / f"{name}.summaries.json"
    annotations = RELEASED / f"{name}.annotations.json"
    if not (summaries.exists() and annotations.exists()):
        missing_shared("released-data")
    return summaries, json.loads(summaries.read_text()), json.loads(annotations.read_text())


def annotation_responder(
    summaries: dict[str, str], annotations: dict[str, Any]
) -> Callable[[dict[str, Any]], str]:
    """Answers each sentence with its released GPT-4 annotation, in the paper's form.

    The summary is the end of the first (cached) message, the sentence sits between
    '[Your sentence]' and '[Your response]' in the last one. A sentence the release does
    not list, or a null book, had no confusion.
    """
    by_summary = {text: annotations.get(book) or {} for book, text in summaries.items()}

    def respond(request: dict[str, Any]) -> str:
        shared = str(request["messages"][0]["content"])
        summary = shared.rsplit("[Your summary]\n", 1)[1]
        sentence = _SENTENCE.search(str(request["messages"][-1]["content"]))
        assert sentence is not None, "the sentence must be in the last message"
        found = by_summary[summary].get(sentence.group(1))
        if not found:
            return "Questions: no confusion\nTypes: no confusion"
        return f"Questions: {found['questions']}\nTypes: {', '.join(found['types'])}"

    return respond
