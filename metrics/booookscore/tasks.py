"""BooookScore's Label Studio task kinds, ``HUMAN_TASKS``: span annotation and validation.

``coherence``: people mark the confusing spans of a summary, in BooookScore's human format
(``runner.api.span_annotation`` over ``HUMAN``: sec. 3's protocol, the M.4 taxonomy).

``validation`` (Appendix J): a validator says whether one annotation (a span, or two related
spans, with questions) is right, by the paper's standards. The annotations come from the run's
own ``annotations.json`` (the judge's flagged sentences) and from ``--annotations SOURCE=FILE``
(this format, or the authors' human format, ``{book: {"summary", "singles", "relations"}}``),
human and model ones mixed in one order, their source concealed: only the key has it. The
verdicts are ``runner.api.Validation``; the metric's meta tables give each source's precision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from metrics.booookscore.human import HUMAN
from runner.api import VALIDATION_VERDICTS, HumanDataError, Validation, span_task
from runner.api.human_task import (
    CHOICES,
    TEXTAREA,
    HumanTask,
    TaskAnswer,
    TaskInput,
    TaskItem,
    TaskSystem,
    headers,
)

ANNOTATIONS = "annotations.json"
"""The run's artifact of the judge's flagged sentences (the metric's own)."""
VALIDATION_HELP = (
    "Given the summary and one annotation of it (a span, or two related spans, with "
    "questions), say whether you agree with the annotation.",
    "Standards: 1. the span is confusing; 2. the questions are (a) relevant to the span, "
    "(b) not answered anywhere in the summary, explicitly or implicitly, and (c) addressing "
    "issues that, left unresolved, would make the summary incoherent or make it hard for "
    "readers to understand the main storyline.",
    "Agree: both the span and the questions meet the standards. Partially agree: the span is "
    "confusing, but the questions fail one or more standards. Don't agree: the span is not "
    "at all confusing, whatever the questions.",
)


@dataclass(frozen=True)
class Annotation:
    """One annotation to validate: a span, or two related ones, with questions."""

    doc_id: str
    source: str
    summary: str
    span: str
    questions: str
    labels: tuple[str, ...] = ()


def _config() -> str:
    lines = ["<View>", *headers("Validate an annotation of a book summary", VALIDATION_HELP)]
    lines += ['  <Header value="Summary"/>', '  <Text name="summary" value="$summary"/>']
    lines += [
        '  <Header value="Annotated span"/>',
        '  <Text name="annotation" value="$annotation"/>',
    ]
    lines += [
        '  <Header value="Questions"/>',
        '  <Text name="annotation_questions" value="$annotation_questions"/>',
        '  <Header size="5" value="Do you agree with this annotation?"/>',
        '  <Choices name="agreement" toName="summary" choice="single" required="true">',
    ]
    lines += [f"    <Choice value={quoteattr(v)}/>" for v in VALIDATION_VERDICTS]
    lines.append("  </Choices>")
    lines.append('  <TextArea name="reasons" toName="summary" rows="2" editable="true"/>')
    return "\n".join([*lines, "</View>", ""])


def _tasks(inputs: TaskInput) -> tuple[list[TaskItem], list[str]]:
    """One task per annotation: the run's own, then each ``SOURCE=FILE``'s."""
    found = _annotations(inputs.systems, inputs.files)
    if not found:
        raise HumanDataError(
            f"no annotation to validate: the run has no flagged sentence in {ANNOTATIONS} "
            "and no --annotations SOURCE=FILE was given"
        )
    items = []
    for a in found:
        data = {"summary": a.summary, "annotation": a.span, "annotation_questions": a.questions}
        items.append(TaskItem(a.doc_id, data, {"source": a.source, "labels": list(a.labels)}))
    return items, []


def _annotations(
    systems: tuple[TaskSystem, ...], files: tuple[tuple[str, Path], ...]
) -> list[Annotation]:
    if len(systems) > 1:
        raise HumanDataError("validation tasks take one run or one --system; give one")
    summaries = systems[0].summaries if systems else {}
    found: list[Annotation] = []
    for system in systems:
        own = system.artifact(ANNOTATIONS) if system.is_run else None
        if own is not None:
            origin = f"run {system.name}'s {ANNOTATIONS}"
            found += annotations_of(system.name, own, summaries, origin)
    for source, path in files:
        origin = f"annotations file {path}"
        found += annotations_of(source, _read_json(path), summaries, origin)
    return found


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HumanDataError(f"annotations file {path} does not exist; check the path") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HumanDataError(f"annotations file {path} is not readable JSON ({err})") from None


def sentence_annotations(
    source: str, per_doc: Mapping[str, Any], summaries: Mapping[str, str], origin: str
) -> list[Annotation]:
    """The flagged sentences of BooookScore's format, ``{doc: {sentence: {...}} | null}``.

    A sentence with no types (no confusion) or marked ``unparsed`` is not an annotation.
    """
    out = []
    for doc, sentences in sorted(per_doc.items()):
        if sentences is None:
            continue
        if doc not in summaries:
            raise HumanDataError(
                f"{origin}: book {doc} has annotations but no summary; check inputs"
            )
        if not isinstance(sentences, dict):
            raise HumanDataError(f"{origin}: book {doc} is not an object of sentence -> annotation")
        for sentence, note in sentences.items():
            if isinstance(note, dict) and note.get("types") and not note.get("unparsed"):
                questions = str(note.get("questions") or "")
                labels = tuple(str(t) for t in note["types"])
                out.append(Annotation(doc, source, summaries[doc], sentence, questions, labels))
    return out


def span_annotations(source: str, per_doc: Mapping[str, Any], origin: str) -> list[Annotation]:
    """The authors' human format: ``{book: {"summary", "singles", "relations"}}``."""
    out = []
    for doc, entry in sorted(per_doc.items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("summary"), str):
            raise HumanDataError(
                f"{origin}: book {doc} has no 'summary' text; expected the authors'"
            )
        summary = entry["summary"]
        for s in entry.get("singles") or []:
            labels = tuple(s.get("labels") or ())
            out.append(Annotation(doc, source, summary, s["span"], s["questions"], labels))
        for r in entry.get("relations") or []:
            span = f"A: {r['span_a']} / B: {r['span_b']}"
            labels = tuple(r.get("shared_labels") or ())
            out.append(Annotation(doc, source, summary, span, r["shared_questions"], labels))
    return out


def annotations_of(
    source: str, data: Any, summaries: Mapping[str, str], origin: str
) -> list[Annotation]:
    """An annotations file in either format, told apart by the authors' ``singles`` key."""
    if not isinstance(data, dict):
        raise HumanDataError(f"{origin} is not an object of book -> annotations")
    try:
        if any(isinstance(v, dict) and "singles" in v for v in data.values()):
            return span_annotations(source, data, origin)
        return sentence_annotations(source, data, summaries, origin)
    except (KeyError, TypeError) as err:
        raise HumanDataError(
            f"{origin}: an annotation lacks the field {err}; check its format"
        ) from None


def _unkeyed(data: Mapping[str, Any]) -> tuple[str, tuple[str, ...]] | str:
    """Without a key, a validation task is the authors' own: its data names the source."""
    source = data.get("source")
    if not source:
        return "no key to say whose annotation it is"
    return str(data.get("book", "")), (str(source),)


def _read(answer: TaskAnswer) -> Validation:
    verdict = str(answer.choice("agreement", VALIDATION_VERDICTS))
    annotation = {
        "text": answer.field("annotation"),
        "questions": str(answer.data.get("annotation_questions") or ""),
    }
    return Validation(
        answer.doc_id, answer.systems[0], annotation, verdict, answer.annotator,
        answer.text("reasons"),
    )  # fmt: skip


VALIDATION = HumanTask(
    kind="validation",
    help="Appendix J validation of annotations (BooookScore)",
    config=_config,
    controls={"agreement": CHOICES, "reasons": TEXTAREA},
    fields=("summary", "annotation"),
    tasks=_tasks,
    read=_read,
    text_fields=(),
    unkeyed=_unkeyed,
    inputs="annotations to validate, BooookScore's format or the authors' human format",
)

HUMAN_TASKS = (span_task(HUMAN), VALIDATION)
"""The kinds of task people annotate for BooookScore (``python -m runner.annotate export``)."""
