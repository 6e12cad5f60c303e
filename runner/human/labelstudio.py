"""Read Label Studio JSON exports of our four task kinds into judgments.

One reader serves our own exports (tasks carrying a ``uid`` that the key, kept apart, maps
to the systems judged) and the BooookScore authors' (no ``uid``: each summary is matched by
text against ``candidates``). A task's kind is recognised from its result controls
(``detail``/``structure``/``logic``/``preference``/omission flags: pairwise; ``error_type``:
span annotation; ``agreement``: validation; ``faithful`` and the per-claim ``label_<i>``,
``evidence_<i>``, ``reason_<i>``: claims, a ``ClaimsJudgment``); an annotation with no result
at all (a summary with no error marked) falls back to the task's data fields (``claims``: a
claims task). Each completed annotation of a
task is one judgment, its annotator Label Studio's ``completed_by``. Tasks that cannot be
attributed come back as one line each, never guessed; a file that is wrong raises, as does a
control or value key the task kind's labeling config does not name (``ls_controls``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.api.human_format import ClaimLabel, ClaimsJudgment
from runner.human.attribute import (
    Candidates,
    bad,
    by_key,
    by_text,
    check_key,
    contains,
    expect_dict,
    expect_str,
    load_json,
)
from runner.human.judgments import (
    CRITERIA,
    DRAW,
    SIDE_CHOICES,
    VERDICTS,
    CoherenceAnnotation,
    HumanDataError,
    Judgment,
    Preference,
    Relation,
    Span,
    Verdict,
)
from runner.human.ls_controls import (
    CLAIM_CHOICES,
    FAITHFUL_CONTROL,
    check_results,
    claim_control,
)
from runner.human.owner import built_in_owner, owner

KINDS = ("preference", "coherence", "validation", "claims")
"""Task kinds, named as in the key file's ``kind``."""
SIDES = ("summary_1", "summary_2")
YES_NO = ("Yes", "No")
_KIND_OF_CONTROL = {
    **dict.fromkeys((*CRITERIA, "contradiction", "omission_summary_1", "omission_summary_2"), 0),
    "error_type": 1,
    "agreement": 2,
    FAITHFUL_CONTROL: 3,
}
_KIND_OF_DATA = {"summary_1": 0, "annotation": 2, "claims": 3, "summary": 1}
"""Checked in this order: validation and claims tasks' data also have ``summary``."""


@dataclass(frozen=True)
class _Task:
    """One task of the export, with the words every error about it starts with."""

    path: Path
    id: str
    data: dict[str, Any]
    metric: str = ""
    """The metric owning a span task's format ('' the built-in one; ``runner.human.owner``)."""

    @property
    def book(self) -> str:
        return str(self.data.get("book", ""))

    @property
    def where(self) -> str:
        return f"task {self.id} (book {self.book!r})"

    def error(self, field: str, problem: str, fix: str) -> HumanDataError:
        return bad(self.path, self.where, field, problem, fix)


def read_labelstudio(
    path: Path,
    key: dict[str, Any] | None = None,
    candidates: Candidates | None = None,
    *,
    kind: str | None = None,
    metric: str = "",
) -> tuple[list[Judgment], list[str]]:
    """The judgments of a Label Studio JSON export, and one line per task left unattributed.

    ``key`` is the key file ``runner.annotate export`` wrote (uid -> document and systems);
    without it, ``candidates`` (system -> {doc_id: summary text}) attributes each summary by
    its text. ``kind`` (or the key's) is the task kind the caller expects; a task of another
    kind is an error, as is a bad choice, label or span, or one annotator twice on a task.
    ``metric`` names the metric whose human-judgment format span tasks are in ('' the
    built-in one): their labels are checked against it and the annotations name it.
    """
    tasks = load_json(path)
    if not isinstance(tasks, list):
        raise HumanDataError(
            f"{path}: is a JSON {type(tasks).__name__}, not a list of tasks; "
            "export the project from Label Studio as JSON (not JSON-MIN or CSV)"
        )
    key_tasks = check_key(key, kind, KINDS)
    wanted = key["kind"] if key is not None else kind
    judgments: list[Judgment] = []
    unmatched: list[str] = []
    for index, item in enumerate(tasks):
        raw = expect_dict(item, path, f"task #{index + 1}", "task")
        data = expect_dict(raw.get("data"), path, f"task #{index + 1}", "data")
        task = _Task(path, str(raw.get("id", f"#{index + 1}")), data, metric)
        annotations = [
            expect_dict(a, path, task.where, "annotations") for a in raw.get("annotations") or []
        ]
        annotations = [a for a in annotations if not a.get("was_cancelled")]
        if not annotations:
            unmatched.append(f"{task.where}: no completed annotation")
            continue
        task_kind = _kind(task, annotations, wanted)
        target = _target(task, task_kind, key_tasks, candidates)
        if isinstance(target, str):
            unmatched.append(f"{task.where}: {target}")
            continue
        doc_id, systems = target
        seen: set[str] = set()
        for annotation in annotations:
            annotator = _annotator(task, annotation)
            if annotator in seen:
                problem = f"annotator {annotator} annotated this task twice"
                raise task.error(
                    "completed_by", problem, "delete one in Label Studio, export again"
                )
            seen.add(annotator)
            results = _results(task, annotation)
            check_results(task_kind, results, task.error)
            judgments.append(_PARSERS[task_kind](task, results, doc_id, systems, annotator))
    return judgments, unmatched


def _kind(task: _Task, annotations: list[dict[str, Any]], wanted: str | None) -> str:
    """The task's kind from its result controls (or its data), checked against ``wanted``."""
    found = {
        KINDS[index]
        for annotation in annotations
        for item in _results(task, annotation)
        if (index := _control_kind(item.get("from_name"))) is not None
    }
    if not found:
        field = next((f for f in _KIND_OF_DATA if f in task.data), None)
        found = {KINDS[_KIND_OF_DATA[field]]} if field else set()
    if len(found) != 1:
        kinds = f"task kinds {sorted(found)}" if found else "no known task kind"
        raise task.error("from_name", f"has {kinds}", "use runner.annotate's labeling configs")
    (kind,) = found
    if wanted is not None and kind != wanted:
        raise task.error("from_name", f"a {kind} task, not {wanted}", "pass the right export")
    return kind


def _control_kind(name: Any) -> int | None:
    """The index in ``KINDS`` of the task kind whose config has control ``name``, if any."""
    if isinstance(name, str) and claim_control(name) is not None:
        return KINDS.index("claims")
    return _KIND_OF_CONTROL.get(name) if isinstance(name, str) else None


def _target(
    task: _Task, kind: str, key_tasks: dict[str, Any] | None, candidates: Candidates | None
) -> tuple[str, tuple[str, ...]] | str:
    """(doc_id, systems judged) from the key or by summary text, or why it has none."""
    if key_tasks is not None:
        return by_key(key_tasks, task.data.get("uid"), task.book, task.error)
    if kind == "validation":
        source = task.data.get("source")
        return (task.book, (str(source),)) if source else "no key to say whose annotation it is"
    if candidates is None:
        raise task.error("uid", "no key, no candidates", "pass the key or systems' summaries")
    fields = SIDES if kind == "preference" else ("summary",)
    texts = [expect_str(task.data.get(f), task.path, task.where, f) for f in fields]
    return by_text(texts, fields, task.book, candidates)


def _annotator(task: _Task, annotation: dict[str, Any]) -> str:
    """Label Studio's ``completed_by``: a user id, or a user object in some exports."""
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    if who is None or who == "":
        raise task.error("completed_by", "names no annotator", "export Label Studio's JSON")
    return str(who)


def _results(task: _Task, annotation: dict[str, Any]) -> list[dict[str, Any]]:
    result = annotation.get("result") or []
    if not isinstance(result, list):
        raise task.error("result", "is not a list", "export with Label Studio's JSON")
    return [expect_dict(item, task.path, task.where, "result") for item in result]


def _controls(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """from_name -> value of the whole-task controls (choices, textareas)."""
    return {
        str(item.get("from_name")): item.get("value") or {}
        for item in results
        if item.get("type") != "relation"
    }


def _choice(
    task: _Task, controls: dict[str, Any], name: str, allowed: tuple[str, ...], required: bool
) -> str | None:
    """The one choice made in control ``name``, checked against ``allowed``."""
    if name not in controls:
        if required:
            raise task.error(name, "no choice made", f"answer {name!r} in Label Studio")
        return None
    chosen = controls[name].get("choices") or []
    if len(chosen) != 1 or chosen[0] not in allowed:
        raise task.error(name, f"unknown choice {chosen!r}", f"pick one of {list(allowed)}")
    return str(chosen[0])


def _text(value: dict[str, Any]) -> str:
    """A textarea's text (Label Studio gives a list of lines)."""
    text = value.get("text") or []
    return str(text) if isinstance(text, str) else "\n".join(str(t) for t in text)


def _preference(
    task: _Task, results: list[dict[str, Any]], doc_id: str, systems: tuple[str, ...], who: str
) -> Preference:
    controls = _controls(results)
    side_of = dict(zip(SIDE_CHOICES, (*systems, DRAW), strict=True))
    choices = {c: side_of[str(_choice(task, controls, c, SIDE_CHOICES, True))] for c in CRITERIA}
    names = {"contradiction": "contradiction"}
    names.update({f"omission_{x}": f"omission:{s}" for x, s in zip(SIDES, systems, strict=True)})
    flags = {}
    for control, flag in names.items():
        answer = _choice(task, controls, control, YES_NO, False)
        if answer is not None:
            flags[flag] = answer == "Yes"
    comments = {}
    for control, value in controls.items():
        if control.endswith("_comments") and _text(value):
            base = control.removesuffix("_comments")
            comments[names.get(base, base)] = _text(value)
    return Preference(doc_id, (systems[0], systems[1]), who, choices, flags, comments)


def _coherence(
    task: _Task, results: list[dict[str, Any]], doc_id: str, systems: tuple[str, ...], who: str
) -> CoherenceAnnotation:
    """A span annotation, in the format of the metric whose task it is (``span_owner``)."""
    metric, human = owner(task.metric)
    summary = expect_str(task.data.get("summary"), task.path, task.where, "summary")
    regions: dict[str, dict[str, Any]] = {}
    links = []
    for item in results:
        if item.get("type") == "relation":
            links.append((str(item.get("from_id")), str(item.get("to_id"))))
            continue
        value = item.get("value") or {}
        region = regions.setdefault(str(item.get("id")), {"questions": "", "labels": ()})
        if "start" in value and "end" in value and "span" not in region:
            region["span"] = summary[int(value["start"]) : int(value["end"])]
        if item.get("from_name") == "error_type":
            labels = tuple(value.get("labels") or ())
            unknown = [label for label in labels if label not in human.labels]
            if unknown:
                raise task.error("labels", f"unknown error type {unknown}", f"use {human.labels}")
            region["labels"] = labels
            if isinstance(value.get("text"), str):
                region["span"] = value["text"]
        elif item.get("from_name") == "questions":
            region["questions"] = _text(value)
    spans = {rid: _span(task, summary, rid, region) for rid, region in regions.items()}
    relations = []
    for first, second in links:
        if first not in spans or second not in spans:
            raise task.error("from_id", f"no region {first} or {second}", "export it again")
        head = spans[first]
        relations.append(Relation(Span(head.text), spans[second], head.questions, head.labels))
    linked = {rid for link in links for rid in link}
    singles = tuple(span for rid, span in spans.items() if rid not in linked)
    own = "" if metric == built_in_owner() else metric
    return CoherenceAnnotation(doc_id, systems[0], who, summary, singles, tuple(relations), own)


def _span(task: _Task, summary: str, rid: str, region: dict[str, Any]) -> Span:
    """A region as a Span, after checking its text is a stretch of the summary."""
    text = region.get("span")
    if not text or not contains(summary, text):
        problem = f"region {rid}'s text {str(text)[:60]!r} is not in the summary"
        raise task.error("value.text", problem, "mark spans on the task's own summary")
    return Span(text, region["questions"], region["labels"])


def _verdict(
    task: _Task, results: list[dict[str, Any]], doc_id: str, systems: tuple[str, ...], who: str
) -> Verdict:
    controls = _controls(results)
    verdict = str(_choice(task, controls, "agreement", VERDICTS, True))
    annotation = {
        "text": expect_str(task.data.get("annotation"), task.path, task.where, "annotation"),
        "questions": str(task.data.get("annotation_questions") or ""),
    }
    reasons = _text(controls.get("reasons") or {})
    return Verdict(doc_id, systems[0], annotation, verdict, who, reasons)


def _claims(
    task: _Task, results: list[dict[str, Any]], doc_id: str, systems: tuple[str, ...], who: str
) -> ClaimsJudgment:
    """A claims task's answers: the summary's Yes/No, and each claim's label, evidence, reason.

    Every claim of the task must be labelled (the config requires it); evidence is the
    regions marked with the claim's ``evidence_<i>`` label, in the source's order, each
    checked to be a stretch of the source; ``faithful`` is None when the question was skipped.
    """
    summary = expect_str(task.data.get("summary"), task.path, task.where, "summary")
    source = expect_str(task.data.get("source_text"), task.path, task.where, "source_text")
    texts = _claim_texts(task)
    answer = _choice(task, _controls(results), FAITHFUL_CONTROL, ("Yes", "No"), False)
    labels: dict[int, str] = {}
    evidence: dict[int, list[tuple[int, str]]] = {i: [] for i in range(len(texts))}
    reasons: dict[int, str] = {}
    for item in results:
        name = str(item.get("from_name"))
        found = claim_control(name)
        if found is None:
            continue
        control, index = found
        if index >= len(texts):
            problem = f"claim {index} is not one of the task's {len(texts)} claims"
            raise task.error(name, problem, "export the project again with its own tasks")
        value = item.get("value") or {}
        if control == "label":
            chosen = value.get("choices") or []
            if len(chosen) != 1 or chosen[0] not in CLAIM_CHOICES:
                raise task.error(
                    name, f"unknown choice {chosen!r}", f"pick one of {list(CLAIM_CHOICES)}"
                )
            labels[index] = CLAIM_CHOICES[chosen[0]]
        elif control == "evidence":
            evidence[index].append(_quote(task, name, source, value))
        else:
            reasons[index] = _text(value)
    missing = [i for i in range(len(texts)) if i not in labels]
    if missing:
        raise task.error(
            f"label_{missing[0]}", "no choice made", "label every claim in Label Studio"
        )
    claims = tuple(
        ClaimLabel(i, text, labels[i], tuple(q for _, q in sorted(evidence[i])), reasons.get(i, ""))
        for i, text in enumerate(texts)
    )
    faithful = None if answer is None else answer == "Yes"
    return ClaimsJudgment(doc_id, systems[0], who, summary, faithful, "", claims, "claim")


def _claim_texts(task: _Task) -> list[str]:
    """The task's claims, ``[{"text": ...}]`` as ``runner.annotate`` writes them."""
    raw = task.data.get("claims")
    if not isinstance(raw, list) or not raw:
        raise task.error("claims", "is not a list of claims", "import the tasks.json export wrote")
    return [
        expect_str(expect_dict(c, task.path, task.where, "claims").get("text"), task.path,
                   task.where, "claims.text")
        for c in raw
    ]  # fmt: skip


def _quote(task: _Task, name: str, source: str, value: dict[str, Any]) -> tuple[int, str]:
    """(start, text) of one evidence region, its text checked to be a stretch of the source."""
    start = int(value.get("start") or 0)
    text = value.get("text")
    if not isinstance(text, str) and "end" in value:
        text = source[start : int(value["end"])]
    if not text or not contains(source, str(text)):
        problem = f"evidence {str(text)[:60]!r} is not in the source"
        raise task.error(name, problem, "mark evidence on the task's own source")
    return start, str(text)


_PARSERS: dict[str, Callable[[_Task, list[dict[str, Any]], str, tuple[str, ...], str], Judgment]]
_PARSERS = {
    "preference": _preference,
    "coherence": _coherence,
    "validation": _verdict,
    "claims": _claims,
}
