"""Read Label Studio JSON exports of any task kind into judgments.

One reader serves our own exports (tasks carrying a ``uid`` that the key, kept apart, maps
to the systems judged) and the BooookScore authors' (no ``uid``: each summary is matched by
text against ``candidates``). Every kind is declared the same way (``runner.api.HumanTask``:
the core's ``preference``, each metric's ``HUMAN_TASKS``; ``runner.human.task_kinds``). A
task's kind is recognised from its result controls (the kinds declaring all of them), or for
an annotation with no result at all (a summary with no error marked) from its data fields;
the key's kind, or ``kind``, must be it. Every result is checked against the kind's controls
(``ls_controls``), then the kind reads one person's answers (``HumanTask.read``). Each
completed annotation of a task is one judgment, its annotator Label Studio's
``completed_by``. Tasks that cannot be attributed come back as one line each, never guessed;
a file that is wrong raises, as does one annotator twice on a task.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.api.human_format import ClaimsJudgment, CoherenceAnnotation, Validation
from runner.api.human_task import TaskAnswer
from runner.human.attribute import (
    Candidates,
    bad,
    by_key,
    by_text,
    check_key,
    expect_dict,
    expect_str,
    load_json,
)
from runner.human.judgments import HumanDataError, Judgment, Preference, Rating
from runner.human.ls_controls import check_results, declared_name
from runner.human.task_kinds import Declared, declared

JUDGMENTS = (CoherenceAnnotation, Preference, Validation, Rating, ClaimsJudgment)
"""What a kind's ``read`` may return: the judgments the core records."""


@dataclass(frozen=True)
class _Task:
    """One task of the export, with the words every error about it starts with."""

    path: Path
    id: str
    data: dict[str, Any]

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
    ``metric`` names a metric to find task kinds in beside the installed ones (a module
    file or an import path); the key names it when its export did.
    """
    tasks = load_json(path)
    if not isinstance(tasks, list):
        raise HumanDataError(
            f"{path}: is a JSON {type(tasks).__name__}, not a list of tasks; "
            "export the project from Label Studio as JSON (not JSON-MIN or CSV)"
        )
    kinds, _ = declared(metric or (str(key.get("metric") or "") if isinstance(key, dict) else ""))
    key_tasks = check_key(key, kind, tuple(kinds))
    wanted = key["kind"] if key is not None else kind
    judgments: list[Judgment] = []
    unmatched: list[str] = []
    for index, item in enumerate(tasks):
        raw = expect_dict(item, path, f"task #{index + 1}", "task")
        data = expect_dict(raw.get("data"), path, f"task #{index + 1}", "data")
        task = _Task(path, str(raw.get("id", f"#{index + 1}")), data)
        annotations = [
            expect_dict(a, path, task.where, "annotations") for a in raw.get("annotations") or []
        ]
        annotations = [a for a in annotations if not a.get("was_cancelled")]
        if not annotations:
            unmatched.append(f"{task.where}: no completed annotation")
            continue
        task_kind = _kind(task, annotations, wanted, kinds)
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
            check_results(task_kind.task, results, task.error)
            judgments.append(_read(task, task_kind, results, doc_id, systems, annotator))
    return judgments, unmatched


def _read(
    task: _Task,
    kind: Declared,
    results: list[dict[str, Any]],
    doc_id: str,
    systems: tuple[str, ...],
    annotator: str,
) -> Judgment:
    """One person's answers read by the kind, checked to be a judgment the core records."""
    answer = TaskAnswer(
        kind.task.kind, task.data, results, doc_id, systems, annotator, kind.owner, task.error
    )
    judgment = kind.task.read(answer)
    if not isinstance(judgment, JUDGMENTS):
        expected = ", ".join(t.__name__ for t in JUDGMENTS)
        raise HumanDataError(
            f"{kind.origin}: task kind {kind.task.kind!r} read a {type(judgment).__name__}, "
            f"not a judgment ({expected}); return one of them from HumanTask.read"
        )
    return judgment


def _kind(
    task: _Task,
    annotations: list[dict[str, Any]],
    wanted: str | None,
    kinds: dict[str, Declared],
) -> Declared:
    """The task's kind from its result controls (or its data), checked against ``wanted``."""
    names = {
        item.get("from_name")
        for annotation in annotations
        for item in _results(task, annotation)
        if item.get("type") != "relation"
    }
    fits: set[str] | None = None
    for name in names:
        having = {k for k, d in kinds.items() if declared_name(name, d.task.controls)}
        if having:  # a control no kind has is named by the kind's own check
            fits = having if fits is None else fits & having
    if fits is None:
        fits = _by_fields(task.data, kinds)
    if wanted is not None and wanted in fits:
        return kinds[wanted]
    if len(fits) != 1:
        found = f"task kinds {sorted(fits)}" if fits else "no known task kind"
        raise task.error("from_name", f"has {found}", "use runner.annotate's labeling configs")
    (kind,) = fits
    if wanted is not None:
        raise task.error("from_name", f"a {kind} task, not {wanted}", "pass the right export")
    return kinds[kind]


def _by_fields(data: dict[str, Any], kinds: dict[str, Declared]) -> set[str]:
    """The kinds whose data fields the task has, the most specific (most fields) only."""
    present = {k: len(d.task.fields) for k, d in kinds.items() if set(d.task.fields) <= set(data)}
    most = max(present.values(), default=0)
    return {k for k, n in present.items() if n == most}


def _target(
    task: _Task, kind: Declared, key_tasks: dict[str, Any] | None, candidates: Candidates | None
) -> tuple[str, tuple[str, ...]] | str:
    """(doc_id, systems judged) from the key or by summary text, or why it has none."""
    if key_tasks is not None:
        return by_key(key_tasks, task.data.get("uid"), task.book, task.error)
    fields = kind.task.text_fields
    if not fields:
        if kind.task.unkeyed is None:
            return f"no key: a {kind.task.kind} task is attributed only by its key"
        return kind.task.unkeyed(task.data)
    if candidates is None:
        raise task.error("uid", "no key, no candidates", "pass the key or systems' summaries")
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
