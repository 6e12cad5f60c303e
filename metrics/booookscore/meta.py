"""BooookScore's meta tables: the judge's sentence flags against people's spans, and Appendix J.

This metric's ``meta_tables`` hook of ``python -m runner.report meta=true``
(``runner.api.meta``). A judged run's BooookScore answers are its artifact
``annotations.json`` (``{doc_id: {sentence: {"questions", "types"}}}``, written from this
metric's artifact); people's are ``CoherenceAnnotation`` spans. A person's span may cover
several sentences: it flags every Punkt sentence (``runner.api.sentence_spans``) it overlaps,
with its labels (a relation's labels go to both of its spans). A span not found in the
summary is never guessed into a sentence: it is counted in a note.

``sentence_table``: precision, recall, F1 and Cohen's kappa of the judge's flags against the
people's, overall and per error type (the BooookScore paper's Appendix H), one unit per
(human annotation, judged summary) pair, bootstrapped over those units.

``precision_table``: Appendix J's annotation precision per source, (Agree + Partially agree)
over all of a validator's verdicts (``runner.api.Validation``), bootstrapped over documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metrics.booookscore.human import HUMAN
from runner.api import (
    VALIDATION_VERDICTS,
    ClaimsJudgment,
    CoherenceAnnotation,
    Span,
    Validation,
    sentence_spans,
)
from runner.api import meta as st
from runner.api.meta import Boot, Cell, MetaInput, MetaTable, MetaTables, RunView, run_label

ANNOTATIONS_FILE = "annotations.json"
"""This metric's per-sentence answers, per document, in a judged run."""
JudgeAnswers = dict[str, dict[str, dict[str, Any]]]
"""doc_id -> sentence -> the judge's answer (``{"questions", "types"}``; ``unparsed``)."""
NEEDS = (
    "no meta_sentences table: it needs coherence annotations of summaries whose judged run has "
    "BooookScore's annotations.json"
)
NEEDS_VALIDATION = "no meta_precision table: it needs Appendix J verdicts"


@dataclass(frozen=True)
class SentenceFlags:
    """One person's flags on the sentences of one summary."""

    sentences: tuple[str, ...]
    flagged: tuple[bool, ...]
    labels: tuple[frozenset[str], ...]
    unlocated: int
    """Spans not found in the summary text (left out)."""


def locate(summary: str, text: str) -> tuple[int, int] | None:
    """Where ``text`` is in ``summary``: exactly, else with any run of whitespace as one."""
    wanted = text.strip()
    if not wanted:
        return None
    start = summary.find(wanted)
    if start >= 0:
        return start, start + len(wanted)
    found = re.search(r"\s+".join(map(re.escape, wanted.split())), summary)
    return (found.start(), found.end()) if found else None


def human_flags(annotation: CoherenceAnnotation) -> SentenceFlags:
    """The annotation's spans as flags on the summary's Punkt sentences (see the docstring)."""
    summary = annotation.summary
    bounds = sentence_spans(summary)
    flagged = [False] * len(bounds)
    labels: list[set[str]] = [set() for _ in bounds]
    marks: list[tuple[Span, tuple[str, ...]]] = [(s, s.labels) for s in annotation.singles]
    for rel in annotation.relations:
        marks += [(rel.first, rel.first.labels + rel.labels)]
        marks += [(rel.second, rel.second.labels + rel.labels)]
    unlocated = 0
    for span, span_labels in marks:
        where = locate(summary, span.text)
        if where is None:
            unlocated += 1
            continue
        for i, (start, end) in enumerate(bounds):
            if start < where[1] and where[0] < end:
                flagged[i] = True
                labels[i].update(span_labels)
    return SentenceFlags(
        tuple(summary[s:e] for s, e in bounds),
        tuple(flagged),
        tuple(frozenset(x) for x in labels),
        unlocated,
    )


def judge_flag(answer: dict[str, Any] | None) -> tuple[bool, frozenset[str]] | None:
    """The judge's flag and error types for one sentence; None when not judged or unparsed."""
    if not isinstance(answer, dict) or answer.get("unparsed"):
        return None
    types = answer.get("types")
    return types is not None, frozenset(types or ())


def _counts(human: Sequence[bool], judge: Sequence[bool]) -> list[float]:
    pairs = list(zip(judge, human, strict=True))
    return [
        float(sum(j and h for j, h in pairs)),
        float(sum(j and not h for j, h in pairs)),
        float(sum(h and not j for j, h in pairs)),
        float(sum(not j and not h for j, h in pairs)),
    ]


def sentence_units(
    annotations: Sequence[CoherenceAnnotation], runs: Sequence[RunView]
) -> tuple[dict[str, list[dict[str, list[float]]]], list[str]]:
    """Judge label -> per unit, (tp, fp, fn, tn) overall (key '') and per error type.

    With a note for what was left out: spans not found in their summary, sentences the judge
    has no readable answer for, summaries none of whose sentences the judge answered.
    """
    units: dict[str, list[dict[str, list[float]]]] = {}
    unlocated = unanswered = unmatched = 0
    by_id = {r.run_id: r for r in runs}
    answered = judge_answers(
        [by_id[s] for s in sorted({a.system for a in annotations}) if s in by_id]
    )
    for ann in annotations:
        if ann.system not in answered:
            continue
        answers = answered[ann.system].get(ann.doc_id) or {}
        people = human_flags(ann)
        rows = []
        for i, sentence in enumerate(people.sentences):
            judged = judge_flag(answers.get(sentence))
            if judged is not None:
                rows.append((people.flagged[i], people.labels[i], *judged))
        unlocated += people.unlocated
        unanswered += len(people.sentences) - len(rows)
        if not rows:
            unmatched += 1
            continue
        unit = {"": _counts([r[0] for r in rows], [r[2] for r in rows])}
        for t in HUMAN.labels:
            unit[t] = _counts([t in r[1] for r in rows], [t in r[3] for r in rows])
        units.setdefault(judge_label(by_id[ann.system]), []).append(unit)
    notes = []
    if unlocated:
        notes.append(
            f"sentence level: {unlocated} human spans not found in their summary, left out"
        )
    if unanswered:
        notes.append(
            f"sentence level: {unanswered} sentences without a readable judge answer (unparsed, "
            "or the judged run's summary differs from the annotated one), left out"
        )
    if unmatched:
        notes.append(f"sentence level: {unmatched} annotated summaries with no judged sentence")
    return units, notes


def sentence_table(
    annotations: Sequence[CoherenceAnnotation], runs: Sequence[RunView], boot: Boot
) -> tuple[MetaTable | None, list[str]]:
    """Precision, recall, F1 and kappa of the judge's flags against the people's; notes."""
    units, notes = sentence_units(annotations, runs)
    if not units:
        return None, notes
    rows: list[tuple[Cell, ...]] = []
    for judge, found in sorted(units.items()):
        labels = dict.fromkeys(k for u in found for k in u if k)  # the owners' labels, in order
        for key in ("", *labels):
            counts = np.array([u.get(key, [0.0] * 4) for u in found])
            total = counts.sum(axis=0)
            if key and not total[0] + total[1] + total[2]:
                continue  # an error type neither side used
            stats = [boot.run(len(found), st.pooled(counts, rule)) for rule in _RULES]
            sentences = int(total.sum())
            rows.append((judge, key or "any error", len(found), sentences, *stats))
    header = ("judge", "error type", "summaries", "sentences", "precision", "recall", "F1", "kappa")
    caption = (
        "Judge's sentence flags vs people's (a person's span flags each sentence it overlaps): "
        f"value [{boot.confidence:.0%} CI], percentile bootstrap over summaries "
        f"({boot.resamples} resamples, seed {boot.seed}); per error type, a sentence counts as "
        "flagged with that type."
    )
    return MetaTable("meta_sentences", "Sentence level", header, tuple(rows), caption), notes


_RULES = (st.precision, st.recall, st.f1, st.kappa)


def judge_label(run: RunView) -> str:
    """The judge a run's BooookScore used, as the run recorded it.

    Alias, model, temperature and samples: ``runner.api.meta.judge_identity``.
    """
    return st.judge_identity(run.params) or "judge"


def judge_answers(runs: Sequence[RunView]) -> dict[str, JudgeAnswers]:
    """Run id -> its judge answers, for each of ``runs`` that has ``annotations.json``."""
    answers: dict[str, JudgeAnswers] = {}
    for run in runs:
        found = run.read_json(ANNOTATIONS_FILE)
        if isinstance(found, dict):
            answers[run.run_id] = found
    return answers


AGREEING = VALIDATION_VERDICTS[:2]
"""The verdicts Appendix J's precision counts as right."""


def precision_table(inputs: MetaInput) -> MetaTable | None:
    """Annotation precision per source (Appendix J)."""
    verdicts = [j for j in inputs.judgments if isinstance(j, Validation)]
    if not verdicts:
        return None
    rows: list[tuple[Cell, ...]] = []
    for source in sorted({v.source for v in verdicts}):
        mine = [v for v in verdicts if v.source == source]
        docs = sorted({v.doc_id for v in mine})
        hits = [sum(v.verdict in AGREEING for v in mine if v.doc_id == d) for d in docs]
        totals = [sum(v.doc_id == d for v in mine) for d in docs]
        counts = [sum(v.verdict == name for v in mine) for name in VALIDATION_VERDICTS]
        stat = inputs.boot.run(len(docs), st.ratio(hits, totals))
        rows.append((run_label(source, inputs.judged), len(docs), len(mine), *counts, stat))
    header = ("source", "documents", "annotations", *VALIDATION_VERDICTS, "precision %")
    caption = (
        "Annotation precision = (Agree + Partially agree) / all verdicts (BooookScore "
        f"Appendix J); {inputs.boot.described('documents')}."
    )
    return MetaTable("meta_precision", "Annotation precision", header, tuple(rows), caption)


def meta_tables(inputs: MetaInput) -> MetaTables:
    """The sentence-level and Appendix J precision tables of ``report meta=true``.

    Or a note saying what each needs (none for a faithfulness study: claims judgments alone).
    """
    annotations = [j for j in inputs.judgments if isinstance(j, CoherenceAnnotation)]
    sentences, notes = (
        (None, []) if not annotations else sentence_table(annotations, inputs.runs, inputs.boot)
    )
    precision = precision_table(inputs)
    if not all(isinstance(j, ClaimsJudgment) for j in inputs.judgments):
        notes += [] if sentences else [NEEDS]
        notes += [] if precision else [NEEDS_VALIDATION]
    return MetaTables(tuple(t for t in (sentences, precision) if t is not None), tuple(notes))
