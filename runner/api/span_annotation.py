"""The span-annotation task of a ``HumanFormat``: people mark the confusing spans of a summary.

``span_task(HUMAN)`` is the ``HumanTask`` a metric with a span format declares in
``HUMAN_TASKS`` (BooookScore's is its ``coherence`` kind). Its title, instructions, labels and
their definitions are the format's. Each region of an answer becomes a ``Span`` (its labels
from the Labels control ``error_type``, its questions from the per-region text area
``questions``); two regions linked by a relation are a ``Relation``. A region without labels,
a label the format does not give, or a span that is not a stretch of the summary is one line.

A plugin-API module: it imports nothing of ``runner`` beyond the other plugin-API modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import quoteattr

from runner.api.human_format import (
    CoherenceAnnotation,
    HumanDataError,
    HumanFormat,
    Relation,
    Span,
)
from runner.api.human_task import (
    LABELS,
    REGION_TEXTAREA,
    HumanTask,
    TaskAnswer,
    TaskInput,
    TaskItem,
    area_text,
    headers,
)

LABEL_CONTROL = "error_type"
"""The Labels control over the summary: a region's labels."""
QUESTIONS_CONTROL = "questions"


def span_task(human: HumanFormat) -> HumanTask:
    """The task kind ``human.task`` in which people annotate summaries in ``human``'s format."""
    return HumanTask(
        kind=human.task,
        help=f"span annotation ({human.name}: {human.task_title.lower()})",
        config=lambda: _config(human),
        controls={LABEL_CONTROL: LABELS, QUESTIONS_CONTROL: REGION_TEXTAREA},
        fields=("summary",),
        tasks=_tasks,
        read=lambda answer: _read(human, answer),
    )


def _config(human: HumanFormat) -> str:
    lines = ["<View>", *headers(human.task_title, human.instructions)]
    lines += [
        f'  <Header size="6" value={quoteattr(f"{label.capitalize()}: {text}.")}/>'
        for label, text in human.label_help.items()
    ]
    lines.append(f'  <Labels name="{LABEL_CONTROL}" toName="summary" choice="multiple">')
    lines += [f"    <Label value={quoteattr(label)}/>" for label in human.labels]
    lines.append("  </Labels>")
    lines.append('  <Text name="summary" value="$summary" granularity="word"/>')
    lines.append('  <Header size="5" value="Questions about the selected span"/>')
    lines.append(
        f'  <TextArea name="{QUESTIONS_CONTROL}" toName="summary" perRegion="true" '
        'editable="true" rows="2"/>'
    )
    return "\n".join([*lines, "</View>", ""])


def _tasks(inputs: TaskInput) -> tuple[list[TaskItem], list[str]]:
    """One task per (system, document), all systems mixed by the core."""
    if not inputs.systems:
        raise HumanDataError("span annotation tasks need a run or --system NAME=FILE; give one")
    items = [
        TaskItem(doc, {"summary": text}, {"system": s.name})
        for s in inputs.systems
        for doc, text in sorted(s.summaries.items())
    ]
    return items, []


def _read(human: HumanFormat, answer: TaskAnswer) -> CoherenceAnnotation:
    summary = answer.field("summary")
    _check_regions(answer)
    regions: dict[str, dict[str, Any]] = {}
    links = []
    for item in answer.results:
        if item.get("type") == "relation":
            links.append((str(item.get("from_id")), str(item.get("to_id"))))
            continue
        value = item.get("value") or {}
        region = regions.setdefault(str(item.get("id")), {"questions": "", "labels": ()})
        if "start" in value and "end" in value and "span" not in region:
            region["span"] = summary[int(value["start"]) : int(value["end"])]
        if item.get("from_name") == LABEL_CONTROL:
            labels = tuple(value.get("labels") or ())
            unknown = [label for label in labels if label not in human.labels]
            if unknown:
                raise answer.error("labels", f"unknown error type {unknown}", f"use {human.labels}")
            region["labels"] = labels
            if isinstance(value.get("text"), str):
                region["span"] = value["text"]
        elif item.get("from_name") == QUESTIONS_CONTROL:
            region["questions"] = area_text(value)
    spans = {rid: _span(answer, summary, rid, region) for rid, region in regions.items()}
    relations = []
    for first, second in links:
        if first not in spans or second not in spans:
            raise answer.error("from_id", f"no region {first} or {second}", "export it again")
        head = spans[first]
        relations.append(Relation(Span(head.text), spans[second], head.questions, head.labels))
    linked = {rid for link in links for rid in link}
    singles = tuple(span for rid, span in spans.items() if rid not in linked)
    system = answer.systems[0]
    return CoherenceAnnotation(
        answer.doc_id, system, answer.annotator, summary, singles, tuple(relations), answer.metric
    )


def _check_regions(answer: TaskAnswer) -> None:
    """Each region has a result of the Labels control.

    A span without labels is an error, never read as "no labels".
    """
    results = answer.results
    regions = {str(item.get("id")) for item in results if item.get("type") != "relation"}
    labelled = {str(item.get("id")) for item in results if item.get("from_name") == LABEL_CONTROL}
    for rid in sorted(regions - labelled):
        problem = f"region {rid} has no {LABEL_CONTROL!r} result (its error types)"
        fix = f"use runner.annotate's labeling-{answer.kind}.xml as the project's labeling config"
        raise answer.error(LABEL_CONTROL, problem, fix)


def _span(answer: TaskAnswer, summary: str, rid: str, region: Mapping[str, Any]) -> Span:
    """A region as a Span, after checking its text is a stretch of the summary."""
    text = region.get("span")
    if not text or _flat(str(text)) not in _flat(summary):
        problem = f"region {rid}'s text {str(text)[:60]!r} is not in the summary"
        raise answer.error("value.text", problem, "mark spans on the task's own summary")
    return Span(str(text), region["questions"], region["labels"])


def _flat(text: str) -> str:
    """Whitespace runs as one space: Label Studio and editors reflow line ends."""
    return " ".join(text.split())
