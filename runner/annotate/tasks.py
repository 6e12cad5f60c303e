"""Blind Label Studio tasks and the key that maps them back, for each kind of study.

A task shows only an opaque ``uid``, the book (doc_id) and text; which run or system wrote a
summary (or an annotation) is only in the key, written to a separate file. One
``random.Random(seed)`` draws the task order, the sides of each pair and the uids, so the same
inputs and seed give the same files (the paper: "we shuffle the ordering of incremental and
hierarchical summaries for each summary pair, and conceal the summarization method").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from runner.annotate.claims import Claimed
from runner.annotate.sources import SourceError, System


@dataclass(frozen=True)
class Export:
    """What ``export`` writes: the tasks, the key, and notes on what was left out."""

    tasks: list[dict[str, Any]]
    key: dict[str, Any]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Annotation:
    """One annotation to validate (Appendix J): a span, or two related ones, with questions."""

    doc_id: str
    source: str
    summary: str
    span: str
    questions: str
    labels: tuple[str, ...] = ()


def _uid(rng: random.Random) -> str:
    return f"t{rng.getrandbits(64):016x}"


def _task(data: dict[str, str]) -> dict[str, Any]:
    return {"data": data}


def preference(systems: list[System], seed: int) -> Export:
    """One pairwise task per document both systems summarized, sides drawn at random."""
    if len(systems) != 2:
        names = ", ".join(s.name for s in systems) or "none"
        raise SourceError(f"pairwise tasks need exactly two systems, got {names}; give two")
    first, second = systems
    shared = sorted(set(first.summaries) & set(second.summaries))
    if not shared:
        raise SourceError(
            f"systems {first.name} and {second.name} share no document; pick runs of the same data"
        )
    notes = [
        f"left out {doc}: only {s.name} summarized it"
        for s, other in ((first, second), (second, first))
        for doc in sorted(set(s.summaries) - set(other.summaries))
    ]
    rng = random.Random(seed)
    rng.shuffle(shared)
    tasks, key = [], {}
    for doc in shared:
        pair = [first, second]
        if rng.random() < 0.5:
            pair.reverse()
        uid = _uid(rng)
        data = {"uid": uid, "book": doc}
        data.update({f"summary_{i}": s.summaries[doc] for i, s in enumerate(pair, 1)})
        tasks.append(_task(data))
        key[uid] = {"doc_id": doc, "systems": [s.name for s in pair]}
    return Export(tasks, {"kind": "preference", "seed": seed, "tasks": key}, notes)


def coherence(systems: list[System], seed: int) -> Export:
    """One span-annotation task per (system, document), all systems mixed in one order."""
    if not systems:
        raise SourceError("span annotation tasks need a run or --system NAME=FILE; give one")
    items = [(s.name, doc, text) for s in systems for doc, text in sorted(s.summaries.items())]
    rng = random.Random(seed)
    rng.shuffle(items)
    tasks, key = [], {}
    for system, doc, text in items:
        uid = _uid(rng)
        tasks.append(_task({"uid": uid, "book": doc, "summary": text}))
        key[uid] = {"doc_id": doc, "system": system}
    return Export(tasks, {"kind": "coherence", "seed": seed, "tasks": key})


def claims(summaries: list[tuple[str, Claimed]], seed: int) -> Export:
    """One claims task per (system, summary): source, summary and each claim, all mixed.

    ``summaries`` pairs each system's name with a summary to label; a task's claims keep
    their order (the index people's labels come back under).
    """
    if not summaries:
        raise SourceError("claims tasks need a run with claims; give one")
    items = list(summaries)
    rng = random.Random(seed)
    rng.shuffle(items)
    tasks, key = [], {}
    for system, c in items:
        uid = _uid(rng)
        data: dict[str, Any] = {"uid": uid, "book": c.doc_id, "source_text": c.source}
        data.update({"summary": c.summary, "claims": [{"text": text} for text in c.claims]})
        tasks.append({"data": data})
        key[uid] = {"doc_id": c.doc_id, "system": system}
    return Export(tasks, {"kind": "claims", "seed": seed, "tasks": key})


def validation(annotations: list[Annotation], seed: int) -> Export:
    """One Appendix J task per annotation, human and model ones mixed, origin concealed."""
    if not annotations:
        raise SourceError(
            "no annotation to validate: the run has no flagged sentence in annotations.json "
            "and no --annotations SOURCE=FILE was given"
        )
    items = list(annotations)
    rng = random.Random(seed)
    rng.shuffle(items)
    tasks, key = [], {}
    for a in items:
        uid = _uid(rng)
        data = {"uid": uid, "book": a.doc_id, "summary": a.summary, "annotation": a.span}
        data["annotation_questions"] = a.questions
        tasks.append(_task(data))
        key[uid] = {"doc_id": a.doc_id, "source": a.source, "labels": list(a.labels)}
    return Export(tasks, {"kind": "validation", "seed": seed, "tasks": key})


def sentence_annotations(
    source: str, per_doc: dict[str, Any], summaries: dict[str, str], origin: str
) -> list[Annotation]:
    """The flagged sentences of BooookScore's format, ``{doc: {sentence: {...}} | null}``.

    A sentence with no types (no confusion) or marked ``unparsed`` is not an annotation.
    """
    out = []
    for doc, sentences in sorted(per_doc.items()):
        if sentences is None:
            continue
        if doc not in summaries:
            raise SourceError(f"{origin}: book {doc} has annotations but no summary; check inputs")
        if not isinstance(sentences, dict):
            raise SourceError(f"{origin}: book {doc} is not an object of sentence -> annotation")
        for sentence, note in sentences.items():
            if isinstance(note, dict) and note.get("types") and not note.get("unparsed"):
                questions = str(note.get("questions") or "")
                labels = tuple(str(t) for t in note["types"])
                out.append(Annotation(doc, source, summaries[doc], sentence, questions, labels))
    return out


def span_annotations(source: str, per_doc: dict[str, Any], origin: str) -> list[Annotation]:
    """The authors' human format: ``{book: {"summary", "singles", "relations"}}``."""
    out = []
    for doc, entry in sorted(per_doc.items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("summary"), str):
            raise SourceError(f"{origin}: book {doc} has no 'summary' text; expected the authors'")
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
    source: str, data: Any, summaries: dict[str, str], origin: str
) -> list[Annotation]:
    """An annotations file in either format, told apart by the authors' ``singles`` key."""
    if not isinstance(data, dict):
        raise SourceError(f"{origin} is not an object of book -> annotations")
    try:
        if any(isinstance(v, dict) and "singles" in v for v in data.values()):
            return span_annotations(source, data, origin)
        return sentence_annotations(source, data, summaries, origin)
    except (KeyError, TypeError) as err:
        raise SourceError(
            f"{origin}: an annotation lacks the field {err}; check its format"
        ) from None
