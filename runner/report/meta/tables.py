"""Does a metric agree with people? The meta-evaluation tables as values.

- ``summary_table``: Kendall's tau and Pearson's r between each metric's per-document value
  in the judged runs and the human score of the same summaries;
- the Appendix J precision and the pairwise tables are ``runner.report.meta.pairs``;
- a metric's own tables (BooookScore's sentence flags against people's spans, the faithfulness
  raters against people's labels) come from its ``meta_tables`` hook
  (``runner.report.meta.hooks``).

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

from runner.api import meta as st
from runner.api.errors import DataError
from runner.api.meta import Boot, Cell, MetaTable
from runner.api.text import split_sentences
from runner.human.judgments import CoherenceAnnotation, Rating
from runner.human.owner import owner_of
from runner.report.meta.read import MetaInputs

Pair = tuple[str, str]
"""(run id or system, doc_id): one summary."""


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


def ppi_table(inputs: MetaInputs, boot: Boot) -> tuple[MetaTable | None, list[str]]:
    """PPI++ of each value people scored on some of a run's summaries (``ppi=true``).

    A span annotation's human score is on the scale of its metric's ``score`` value
    (``HumanFormat.score``), so it anchors ``<metric>/score``; a rating anchors the run value
    its criterion names (``booookscore/score``). The population is the run's summaries with
    a decided value; people's are the labelled ones among them.
    """
    people: dict[str, dict[Pair, list[float]]] = {}
    for j in inputs.judgments:
        if isinstance(j, CoherenceAnnotation) and split_sentences(j.summary):
            name, human = owner_of(j)
            key = f"{name}/score"
            people.setdefault(key, {}).setdefault((j.system, j.doc_id), []).append(human.score(j))
        elif isinstance(j, Rating) and isinstance(j.value, int | float):
            people.setdefault(j.criterion, {}).setdefault((j.system, j.doc_id), []).append(
                float(j.value)
            )
    rows: list[tuple[Cell, ...]] = []
    notes: list[str] = []
    for key, scored in sorted(people.items()):
        for system in sorted({s for s, _ in scored}):
            values = {
                doc: v[key]
                for doc, v in inputs.scores.get(system, {}).items()
                if key in v and not math.isnan(v[key])
            }
            if not values:
                continue  # a named system, or a run without the value
            mine = {doc: sum(v) / len(v) for (s, doc), v in scored.items() if s == system}
            labelled = [d for d in values if d in mine]
            try:
                found = st.anchored_mean(
                    [mine[d] for d in labelled],
                    [values[d] for d in labelled],
                    [v for d, v in values.items() if d not in mine],
                    boot.confidence,
                )
            except DataError as err:
                notes.append(f"{key} of run {system[:8]}: no PPI estimate: {err}")
                continue
            rows.append(
                (key, system[:8], found.ppi.n, found.judged, found.ppi, found.judge_only,
                 found.classical, st.labels_worth(found.worth))
            )  # fmt: skip
    if not rows:
        return None, notes
    header = (
        "value",
        "run",
        "people's scores",
        "judged",
        "mean (PPI++)",
        "mean (judge only)",
        "mean (people only)",
        "labels the judge was worth",
    )
    caption = (
        "Each value on people's scale from their scores of some summaries and the judge's of "
        "every summary of the run, by prediction-powered inference (Angelopoulos et al. 2023, "
        f"PPI++, ppi_py), {boot.confidence:.0%} CI; beside it the judge's own mean and people's "
        "scores alone with their classical CI. Labels the judge was worth: people's scores x "
        "(classical CI width / PPI CI width)^2, n/a where either interval has no width."
    )
    table = MetaTable("meta_ppi_summaries", "Summary level: PPI", header, tuple(rows), caption)
    return table, notes
