"""Does a metric agree with people? The meta-evaluation tables as values.

- ``sentence_table``: the judge's per-sentence flags against the people's (precision, recall,
  F1, Cohen's kappa; overall and per error type: the BooookScore paper's Appendix H), one
  unit per (human annotation, judged summary) pair;
- ``summary_table``: Kendall's tau and Pearson's r between each metric's per-document value
  in the judged runs and the human score of the same summaries;
- the Appendix J precision and the pairwise tables are ``runner.report.meta.pairs``.

Every interval bootstraps the units named in the caption (``runner.api.meta``).
The human score of a summary is the score of the metric that owns its annotations' format
(``runner.human.owner``; BooookScore's: 100 x (1 - flagged / sentences), footnote 12's
count, Punkt sentences), as the human run logs it, named ``<metric's name> (human)``;
several annotators of one summary are averaged. A numeric ``Rating`` criterion is a human
score too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from runner.api import meta as st
from runner.api.meta import Boot, Cell, MetaTable
from runner.api.text import split_sentences
from runner.human.judgments import CoherenceAnnotation, Rating
from runner.human.owner import owner_of
from runner.report.meta.read import MetaInputs, human_flags, judge_flag
from runner.tracking.reader import RunRecord

Pair = tuple[str, str]
"""(run id or system, doc_id): one summary."""


def judge_label(run: RunRecord) -> str:
    """The judge a run's BooookScore used (its ``judge.model`` or ``judge`` param)."""
    return run.params.get("judge.model") or run.params.get("judge") or "judge"


SUMMARY_PARAMS = ("strategy", "model", "chunk", "data", "data.path")
"""The params that tell the summaries of two judged runs apart, for their labels."""


def run_label(system: str, judged: Mapping[str, RunRecord]) -> str:
    """A run as its distinguishing params and short id ('strategy=hier (1a2b3c4d)').

    The run's name when no such param differs among the judged runs; a named system as itself.
    """
    run = judged.get(system)
    if run is None:
        return system
    keys = [k for k in SUMMARY_PARAMS if len({r.params.get(k) for r in judged.values()}) > 1]
    name = ",".join(f"{k}={run.params.get(k, '—')}" for k in keys) or run.run_name
    return f"{name} ({system[:8]})"


def _counts(human: Sequence[bool], judge: Sequence[bool]) -> list[float]:
    pairs = list(zip(judge, human, strict=True))
    return [
        float(sum(j and h for j, h in pairs)),
        float(sum(j and not h for j, h in pairs)),
        float(sum(h and not j for j, h in pairs)),
        float(sum(not j and not h for j, h in pairs)),
    ]


def sentence_units(inputs: MetaInputs) -> tuple[dict[str, list[dict[str, list[float]]]], list[str]]:
    """Judge label -> per unit, (tp, fp, fn, tn) overall (key '') and per error type.

    With a note for what was left out: spans not found in their summary, sentences the judge
    has no readable answer for, summaries none of whose sentences the judge answered.
    """
    units: dict[str, list[dict[str, list[float]]]] = {}
    unlocated = unanswered = unmatched = 0
    for ann in inputs.judgments:
        if not isinstance(ann, CoherenceAnnotation) or ann.system not in inputs.answers:
            continue
        answers = inputs.answers[ann.system].get(ann.doc_id) or {}
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
        for t in owner_of(ann)[1].labels:
            unit[t] = _counts([t in r[1] for r in rows], [t in r[3] for r in rows])
        units.setdefault(judge_label(inputs.judged[ann.system]), []).append(unit)
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


def sentence_table(inputs: MetaInputs, boot: Boot) -> tuple[MetaTable | None, list[str]]:
    """Precision, recall, F1 and kappa of the judge's flags against the people's; notes."""
    units, notes = sentence_units(inputs)
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


def human_score_name(metric: str) -> str:
    """A metric's score given by people, as the tables and the figure name it."""
    return f"{metric} (human)"


def human_scores(inputs: MetaInputs) -> dict[str, dict[Pair, float]]:
    """Human score name -> (system, doc) -> the mean over its annotators."""
    found: dict[str, dict[Pair, list[float]]] = {}
    for j in inputs.judgments:
        if isinstance(j, CoherenceAnnotation):
            if split_sentences(j.summary):  # an empty summary has no score to compare
                _, human = owner_of(j)
                name = human_score_name(human.name)
                found.setdefault(name, {}).setdefault((j.system, j.doc_id), []).append(
                    human.score(j)
                )
        elif isinstance(j, Rating) and isinstance(j.value, int | float):
            name = f"{j.criterion} (human)"
            found.setdefault(name, {}).setdefault((j.system, j.doc_id), []).append(float(j.value))
    return {
        name: {pair: sum(v) / len(v) for pair, v in values.items()}
        for name, values in found.items()
    }


def metric_pairs(
    inputs: MetaInputs, human: Mapping[Pair, float], metric: str
) -> list[tuple[float, float]]:
    """(human score, metric value) of each human-scored summary whose run has the metric."""
    out = []
    for (system, doc), score in sorted(human.items()):
        value = inputs.scores.get(system, {}).get(doc, {}).get(metric)
        if value is not None and not math.isnan(value):
            out.append((score, value))
    return out


def summary_table(inputs: MetaInputs, metrics: Sequence[str], boot: Boot) -> MetaTable | None:
    """Kendall's tau and Pearson's r of each metric against each human score."""
    rows: list[tuple[Cell, ...]] = []
    for name, human in sorted(human_scores(inputs).items()):
        for metric in metrics:
            pairs = metric_pairs(inputs, human, metric)
            if not pairs:
                continue
            xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
            tau = boot.run(len(pairs), st.paired(xs, ys, st.kendall_tau))
            r = boot.run(len(pairs), st.paired(xs, ys, st.pearson_r))
            rows.append((name, metric, len(pairs), tau, r))
    if not rows:
        return None
    caption = (
        "Per summary: each metric's value in the judged run against the people's score of the "
        f"same summary; value [{boot.confidence:.0%} CI], percentile bootstrap over summaries "
        f"({boot.resamples} resamples, seed {boot.seed}); Kendall's tau is tau-b."
    )
    header = ("human score", "metric", "summaries", "Kendall's tau", "Pearson's r")
    return MetaTable("meta_summaries", "Summary level", header, tuple(rows), caption)
