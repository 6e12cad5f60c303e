"""A real Label Studio round trip: export, annotate through its API, export, import.

One Label Studio server (its own venv, ``tests/runner/annotate/ls_server.py``) serves the
four task kinds (the claims one from a judged run's ``claims.json``, its per-claim controls
made by Label Studio's ``Repeater``): our labeling config makes each project (Label Studio
parses and checks it), our ``tasks.json`` is imported, an annotator's answers are submitted
through the REST API as the labeling UI sends them, the project is exported as JSON, and
``python -m runner.annotate import`` with the key must give back exactly the judgments
submitted, each side mapped back to its system. Skips without Label Studio, fails under
CI=true (``.ci/run`` installs it).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.human.judgments import (
    ClaimLabel,
    ClaimsJudgment,
    CoherenceAnnotation,
    Judgment,
    Preference,
    Relation,
    Span,
    Verdict,
    from_record,
)
from tests.conftest import REPO, missing
from tests.runner.annotate import ls_browser, ls_check, ls_server
from tests.runner.annotate.claims_runs import CLAIMS, SOURCES, SUMMARIES, data_files, log_run

SENTENCES = {
    "book-a": ("Ann left the farm.", "She found work in the city.", "The farm burned down."),
    "book-b": ("A ship sails north.", "The crew mutinies.", "Nobody says why the captain died."),
    "book-c": ("Two sisters inherit a house.", "They sell it.", "The younger one regrets it."),
}
DOCS = {doc: " ".join(sentences) for doc, sentences in SENTENCES.items()}
OTHER = {doc: text.replace(".", "!", 1) for doc, text in DOCS.items()}
# The annotator's rule for every pairwise task: "hier" has more detail and better logic, the
# structure is a draw, "inc" is preferred overall; the contradiction flag is Yes for book-b.
RULE = {"detail": "hier", "structure": "draw", "logic": "hier", "preference": "inc"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ls_server.Server]:
    """One Label Studio for the module."""
    binary = ls_server.binary()
    if not binary.exists():
        missing(f"Label Studio is not installed at {binary}", ".ci/run's label-studio venv")
    try:
        running = ls_server.start(binary, tmp_path_factory.mktemp("label-studio"))
    except AssertionError as err:
        pins = ls_check.locked(*(path.read_text() for path in ls_check.LOCKS))
        changed = ls_check.drift(pins, ls_check.installed(binary.parent / "python"))
        against = changed or "no package differs"
        raise AssertionError(f"{err}\nagainst the lock: {against}") from None
    yield running
    running.stop()


def _export(kind: str, out: Path, *extra: str) -> dict[str, Any]:
    files = out.parent / "systems"
    files.mkdir(exist_ok=True)
    (files / "hier.json").write_text(json.dumps(DOCS))
    (files / "inc.json").write_text(json.dumps(OTHER))
    systems = ["--system", f"hier={files / 'hier.json'}"]
    if kind == "preference":
        systems += ["--system", f"inc={files / 'inc.json'}"]
    _annotate("export", kind, *systems, *extra, "--seed", "3", "--out", str(out))
    key: dict[str, Any] = json.loads((out / "key.json").read_text())
    return key


def _annotate(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "runner.annotate", *args],
        capture_output=True, text=True, cwd=REPO, timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _project(server: ls_server.Server, out: Path, kind: str) -> tuple[int, list[dict[str, Any]]]:
    config = (out / f"labeling-{kind}.xml").read_text()
    project = server.call("POST", "/api/projects", {"title": kind, "label_config": config})
    tasks = json.loads((out / "tasks.json").read_text())
    server.call("POST", f"/api/projects/{project['id']}/import", tasks)
    listed = server.call("GET", f"/api/tasks?project={project['id']}&page_size=100")["tasks"]
    assert [t["data"] for t in listed] == [t["data"] for t in tasks]
    return int(project["id"]), listed


def _round_trip(server: ls_server.Server, out: Path, kind: str, answer: Any) -> list[Judgment]:
    """Import, answer each task with ``answer(data)``, export, and read back."""
    project, listed = _project(server, out, kind)
    for task in listed:
        result = answer(task["data"])
        server.call("POST", f"/api/tasks/{task['id']}/annotations", {"result": result})
    exported = server.call("GET", f"/api/projects/{project}/export?exportType=JSON")
    path = out / "export.json"
    path.write_text(json.dumps(exported))
    jsonl = out / "judgments.jsonl"
    shown = _annotate(
        "import", str(path), "--key", str(out / "key.json"), "--out", str(jsonl), "--no-record"
    )
    assert f"{len(listed)} judgments read" in shown and "not attributed" not in shown
    return [from_record(json.loads(line)) for line in jsonl.read_text().splitlines()]


def _choice(name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": "summary_1", "type": "choices",
            "value": {"choices": [value]}}  # fmt: skip


def test_pairwise_choices_come_back_mapped_to_their_systems(
    server: ls_server.Server, tmp_path: Path
) -> None:
    key = _export("preference", tmp_path / "out")
    user = str(server.call("GET", "/api/current-user/whoami")["id"])

    def answer(data: dict[str, Any]) -> list[dict[str, Any]]:
        systems = key["tasks"][data["uid"]]["systems"]
        side = {s: f"Summary {i}" for i, s in enumerate(systems, 1)} | {"draw": "Draw"}
        result = [_choice(c, side[winner]) for c, winner in RULE.items()]
        result.append(_choice("contradiction", "Yes" if data["book"] == "book-b" else "No"))
        result.append(_choice("omission_summary_1", "No"))
        comment = {"text": [f"about {data['book']}"]}
        result.append(
            {
                "from_name": "logic_comments",
                "to_name": "summary_1",
                "type": "textarea",
                "value": comment,
            }
        )
        return result

    judgments = _round_trip(server, tmp_path / "out", "preference", answer)
    expected = [
        Preference(
            entry["doc_id"],
            tuple(entry["systems"]),
            user,
            dict(RULE),
            {
                "contradiction": entry["doc_id"] == "book-b",
                f"omission:{entry['systems'][0]}": False,
            },
            {"logic": f"about {entry['doc_id']}"},
        )  # fmt: skip
        for entry in key["tasks"].values()
    ]
    by_doc = sorted(judgments, key=lambda j: j.doc_id)
    assert by_doc == sorted(expected, key=lambda j: j.doc_id)
    assert {p.systems for p in by_doc if isinstance(p, Preference)} == {
        ("hier", "inc"),
        ("inc", "hier"),
    }  # seed 3 puts each system on both sides


def test_spans_questions_and_relations_come_back(server: ls_server.Server, tmp_path: Path) -> None:
    key = _export("coherence", tmp_path / "out")
    user = str(server.call("GET", "/api/current-user/whoami")["id"])

    def region(rid: str, text: str, part: str, labels: list[str], questions: str) -> list[Any]:
        start = text.index(part)
        where = {"start": start, "end": start + len(part)}
        out = [{"id": rid, "from_name": "error_type", "to_name": "summary", "type": "labels",
                "value": {**where, "text": part, "labels": labels}}]  # fmt: skip
        if questions:
            out.append({"id": rid, "from_name": "questions", "to_name": "summary",
                        "type": "textarea", "value": {**where, "text": [questions]}})  # fmt: skip
        return out

    def answer(data: dict[str, Any]) -> list[dict[str, Any]]:
        text = data["summary"]
        first, second, third = SENTENCES[data["book"]]
        result = region("r1", text, first, ["entity omission"], "Who is this?")
        result += region("r2", text, second, ["discontinuity"], "Why now?")
        result += region("r3", text, third, ["discontinuity"], "")
        result.append({"type": "relation", "from_id": "r2", "to_id": "r3", "direction": "right"})
        return result

    judgments = _round_trip(server, tmp_path / "out", "coherence", answer)
    expected = []
    for entry in key["tasks"].values():
        first, second, third = SENTENCES[entry["doc_id"]]
        expected.append(CoherenceAnnotation(
            entry["doc_id"], "hier", user, DOCS[entry["doc_id"]],
            singles=(Span(first, "Who is this?", ("entity omission",)),),
            relations=(Relation(Span(second), Span(third, "", ("discontinuity",)), "Why now?",
                                ("discontinuity",)),),
        ))  # fmt: skip
    assert sorted(judgments, key=lambda j: j.doc_id) == sorted(expected, key=lambda j: j.doc_id)
    assert all(j.flagged == 2 for j in judgments if isinstance(j, CoherenceAnnotation))


def test_validation_verdicts_come_back_with_their_source(
    server: ls_server.Server, tmp_path: Path
) -> None:
    notes = {
        "book-a": {
            "Ann left the farm.": {"questions": "Why?", "types": ["causal omission"]},
            "The farm burned down.": {"questions": None, "types": None},
        },
        "book-c": {"They sell it.": {"questions": "Who buys it?", "types": ["salience"]}},
    }
    (tmp_path / "model.json").write_text(json.dumps(notes))
    key = _export(
        "validation", tmp_path / "out", "--annotations", f"gpt4={tmp_path / 'model.json'}"
    )
    assert len(key["tasks"]) == 2  # the "no confusion" sentence is no annotation
    user = str(server.call("GET", "/api/current-user/whoami")["id"])
    verdict = {"book-a": "Partially agree", "book-c": "Don't agree"}

    def answer(data: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"from_name": "agreement", "to_name": "summary", "type": "choices",
             "value": {"choices": [verdict[data["book"]]]}},
            {"from_name": "reasons", "to_name": "summary", "type": "textarea",
             "value": {"text": ["answered later"]}},
        ]  # fmt: skip

    judgments = _round_trip(server, tmp_path / "out", "validation", answer)
    expected = [
        Verdict("book-a", "gpt4", {"text": "Ann left the farm.", "questions": "Why?"},
                "Partially agree", user, "answered later"),
        Verdict("book-c", "gpt4", {"text": "They sell it.", "questions": "Who buys it?"},
                "Don't agree", user, "answered later"),
    ]  # fmt: skip
    assert sorted(judgments, key=lambda j: j.doc_id) == expected


def test_claim_labels_evidence_and_reasons_come_back(
    server: ls_server.Server, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run = log_run(uri, tmp_path, data_files(tmp_path), SUMMARIES, CLAIMS)
    out = tmp_path / "out"
    _annotate("export", "claims", run, "--tracking-uri", uri, "--seed", "2", "--out", str(out))
    key = json.loads((out / "key.json").read_text())
    user = str(server.call("GET", "/api/current-user/whoami")["id"])
    evidence = {"story-1": "One spring she left for the city.", "story-2": "The captain fell ill."}
    label = {"story-1": "Supported", "story-2": "Not supported"}

    def answer(data: dict[str, Any]) -> list[dict[str, Any]]:
        doc, source = data["book"], data["source_text"]
        start = source.index(evidence[doc])
        result = [
            {"from_name": "faithful", "to_name": "summary", "type": "choices",
             "value": {"choices": ["Yes" if doc == "story-1" else "No"]}},
            {"id": "ev", "from_name": "evidence_1", "to_name": "source_text", "type": "labels",
             "value": {"start": start, "end": start + len(evidence[doc]), "text": evidence[doc],
                       "labels": ["evidence for claim 1"]}},
            {"from_name": "reason_1", "to_name": "claim_1", "type": "textarea",
             "value": {"text": [f"see {doc}"]}},
        ]  # fmt: skip
        for i in range(len(data["claims"])):
            choice = label[doc] if i == 1 else "Cannot tell"
            result.append({"from_name": f"label_{i}", "to_name": f"claim_{i}", "type": "choices",
                           "value": {"choices": [choice]}})  # fmt: skip
        return result

    judgments = _round_trip(server, out, "claims", answer)
    mapped = {"Supported": "supported", "Not supported": "unsupported"}
    expected = []
    for entry in key["tasks"].values():
        doc = entry["doc_id"]
        claims = tuple(
            ClaimLabel(i, text, "cannot_tell")
            if i != 1
            else ClaimLabel(i, text, mapped[label[doc]], (evidence[doc],), f"see {doc}")
            for i, text in enumerate(CLAIMS[doc])
        )
        expected.append(
            ClaimsJudgment(doc, run, user, SUMMARIES[doc], doc == "story-1", "", claims, "claim")
        )
    assert sorted(judgments, key=lambda j: j.doc_id) == sorted(expected, key=lambda j: j.doc_id)
    assert {j.doc_id for j in judgments} == set(SOURCES)


def test_a_claims_task_answered_in_the_labeling_page_comes_back(
    server: ls_server.Server, tmp_path: Path
) -> None:
    """Label Studio's own page renders the Repeater and writes what the reader reads.

    Skips without a headless Chromium (``ls_browser``): the REST test above still runs.
    """
    binary = ls_browser.chromium()
    if binary is None:
        pytest.skip("no Chromium to drive Label Studio's labeling page (set CHROMIUM_BIN)")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run = log_run(uri, tmp_path, data_files(tmp_path), SUMMARIES, CLAIMS)
    out = tmp_path / "out"
    _annotate("export", "claims", run, "--tracking-uri", uri, "--seed", "2", "--out", str(out))
    project, listed = _project(server, out, "claims")
    task = next(t for t in listed if t["data"]["book"] == "story-1")
    url = f"{server.url}/projects/{project}/data?task={task['id']}"
    asyncio.run(_answer_in_page(binary, tmp_path / "chromium", server, url))
    deadline = time.monotonic() + 30
    while not server.call("GET", f"/api/tasks/{task['id']}")["total_annotations"]:
        assert time.monotonic() < deadline, "the page's Submit never reached Label Studio"
        time.sleep(0.5)
    exported = server.call("GET", f"/api/projects/{project}/export?exportType=JSON")
    (out / "export.json").write_text(json.dumps(exported))
    jsonl = out / "judgments.jsonl"
    shown = _annotate("import", str(out / "export.json"), "--key", str(out / "key.json"),
                      "--out", str(jsonl), "--no-record")  # fmt: skip
    assert "1 judgments read" in shown  # Label Studio exports annotated tasks only
    (judgment,) = [from_record(json.loads(line)) for line in jsonl.read_text().splitlines()]
    user = str(server.call("GET", "/api/current-user/whoami")["id"])
    one, two, three = CLAIMS["story-1"]
    assert judgment == ClaimsJudgment(
        "story-1", run, user, SUMMARIES["story-1"], False, "",
        (ClaimLabel(0, one, "supported", ("One spring she left for the city.",), "In spring."),
         ClaimLabel(1, two, "partial"), ClaimLabel(2, three, "cannot_tell")),
        "claim",
    )  # fmt: skip


async def _answer_in_page(binary: str, profile: Path, server: ls_server.Server, url: str) -> None:
    """No; claim 0 supported (evidence dragged over, a reason typed), 1 partial, 2 cannot tell."""
    boxes = f"[...document.querySelectorAll('input[type=checkbox]')].filter({ls_browser.IN_AREA})"
    buttons = "[...document.querySelectorAll('button')]"
    async with ls_browser.Page(binary, profile) as page:
        await page.open(url, ls_browser.session_cookies(server), f"{boxes}.length >= 14")
        for index in (1, 2, 2 + 4 + 1, 2 + 8 + 3):  # Yes, No, then four per claim
            await page.click(f"{boxes}[{index}]")
        label = "[...document.querySelectorAll('span')]"
        await page.click(f"{label}.find(e => e.innerText.trim() === 'evidence for claim 0')")
        await page.drag_over("One spring she left for the city.")
        await page.click(
            f"[...document.querySelectorAll('textarea')].filter({ls_browser.IN_AREA})[0]"
        )
        await page.type("In spring.")
        await page.click(f"{buttons}.find(e => e.innerText.trim() === 'Add')")
        await page.click(f"{buttons}.find(e => e.innerText.trim() === 'Submit')")
        await page.wait_for(f"{buttons}.find(e => e.innerText.trim() === 'Update')", 30)
