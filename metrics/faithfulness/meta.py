"""Faithfulness: does a rater's verdict agree with people's? This metric's meta tables.

``meta_tables`` is the faithfulness metric's hook of ``python -m runner.report meta=true``
(``runner.api.meta``): the report gives it people's judgments and the experiment's FINISHED
runs, and writes the tables it returns (``meta_faithfulness.csv``, ``_claims``, ``_systems``).

A faithfulness rater is any metric whose per-document values include ``faithful`` (1.0
faithful, 0.0 not, NaN undecided) under its label, e.g. ``faithfulness/faithful`` or
``given/faithful``; when it judges claims it also writes ``claims.json`` ({doc_id: [{"index",
"claim", "supported": true|false|null, ...}]}). People's labels are the ``ClaimsJudgment`` values of
the human runs. A rater's summary is matched with people's by document id and by the summary
text with every run of whitespace as one space, never by run id: people's labels are recorded
from release files, the rater runs come later. One row per rater configuration: the metric
label, its ``method`` param (``given``'s ``rater`` param, else its file) and the judge
model; several runs of one configuration give each summary the newest run's value.

Summary level (``faithfulness_table``), as StorySumm's ``Results.ipynb`` computes its Results
table with scikit-learn, faithful (label 1) being the positive class:

- Cohen's kappa between the rater's labels and people's;
- % faithful: the share of summaries the rater labels faithful;
- precision: of the summaries the rater labels faithful, the share people label faithful;
- recall: of the summaries people label faithful, the share the rater labels faithful;
- % easy (% hard): of the unfaithful summaries people rated easy (hard), the share the
  rater labels unfaithful, i.e. the errors caught (the notebook's ``100 - mean(pred)`` over
  that difficulty; every easy or hard summary of StorySumm is unfaithful);
- balanced accuracy: the mean of the recalls of the two classes, in %.

Summaries the rater left undecided (NaN) are left out of every figure, with a note; several
annotators of one summary give its majority label (a tie is left out, with a note).

Claim level (``claim_table``): a rater's per-claim ``supported`` against people's labels of
the same claim (matched by the claim's index, and by its text when both give one), with
FABLES' reading of the labels: only ``supported`` (FABLES' Yes) is faithful; ``partial``
(PartialSupport) and ``unsupported`` (No) are unfaithful; ``cannot_tell`` (Inapplicable)
claims are left out of the agreement, as are claims the rater left undecided. The same
figures as above, without easy and hard, pooled over claims and bootstrapped over summaries.

Per summarizer (``summarizer_table``): people's claim labels per system: the % of all claims
labelled each of ``CLAIM_LABELS`` (FABLES' faithfulness per summarizer is the % labelled
Yes among all of a system's claims, Inapplicable included in the denominator).

Every interval is the percentile bootstrap over summaries of ``runner.api.meta``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from metrics.faithfulness.ppi import RATER_COLUMNS, ppi_table
from runner.api import CLAIM_LABELS, ClaimsJudgment
from runner.api import meta as st
from runner.api.meta import Boot, Cell, MetaInput, MetaTable, MetaTables, RunView

FAITHFUL = "faithful"
"""The per-document value a faithfulness rater gives (``<label>/faithful``)."""
CLAIMS_FILE = "claims.json"
SUMMARIES_FILE = "summaries.json"
SUPPORTED = CLAIM_LABELS[0]
CANNOT_TELL = CLAIM_LABELS[3]
TABLE_NAMES = ("meta_faithfulness", "meta_faithfulness_claims", "meta_faithfulness_systems")
NO_JUDGE = "—"
LISTED = 5
"""Documents named in a note; the rest are counted."""

Key = tuple[str, str]
"""(doc_id, the summary with runs of whitespace as one space): one summary."""
Config = tuple[str, str, str]
"""(metric label, method, judge identity): one rater configuration, one row."""


@dataclass(frozen=True)
class RaterRun:
    """One judged run's faithfulness values under one metric label."""

    run_id: str
    start_time: int
    label: str
    method: str
    judge: str
    summaries: Mapping[str, str]
    """doc_id -> the summary the rater judged (the run's ``summaries.json``)."""
    faithful: Mapping[str, float]
    """doc_id -> 1.0, 0.0, or NaN (undecided, or not scored), for every document of the run."""
    claims: Mapping[str, Sequence[Mapping[str, Any]]]
    """doc_id -> the rater's per-claim answers (``claims.json``); empty when it judges none."""

    @property
    def config(self) -> Config:
        """The row this run's values go to."""
        return (self.label, self.method, self.judge)


def normalized(text: str) -> str:
    """Text with every run of whitespace as one space, trimmed."""
    return " ".join(text.split())


# --- what the rater runs are ------------------------------------------------------------


def faithful_labels(values: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The metric labels with a ``faithful`` value in a run's per-document values."""
    suffix = f"/{FAITHFUL}"
    found = {n[: -len(suffix)] for doc in values.values() for n in doc if n.endswith(suffix)}
    return sorted(found)


def method_of(run: RunView, label: str, resolved: Mapping[str, Any] | None) -> str:
    """What tells two configurations of a rater apart: ``method``, ``rater``, else its file.

    Read from the run's params (an override is logged as one) and else from its resolved
    config (``config.yaml``: a default is not a param).
    """
    block = (resolved or {}).get("metrics", {}) or {}
    block = block.get(label, {}) if isinstance(block, Mapping) else {}
    block = block if isinstance(block, Mapping) else {}
    for key in ("method", "rater", "path"):
        value = run.params.get(f"metrics.{label}.{key}") or block.get(key)
        if value not in (None, "", "None", "null"):
            text = str(value)
            if key == "path":  # a file as its folder and name: raters keep files per model
                path = Path(text)
                text = f"{path.parent.name}/{path.name}" if path.parent.name else path.name
            return text
    return label


def judge_of(run: RunView) -> str:
    """The run's judge as it recorded it; a dash when it has no judge.

    ``runner.api.meta.judge_identity``: one row per identity, never merged by model name.
    """
    return st.judge_identity(run.params) or NO_JUDGE


def read_raters(runs: Sequence[RunView]) -> list[RaterRun]:
    """The faithfulness raters among ``runs``: those with a ``faithful`` value."""
    out: list[RaterRun] = []
    for run in runs:
        labels = faithful_labels(run.values)
        if labels:
            out += _rater_runs(run, labels)
    return out


def _rater_runs(run: RunView, labels: Sequence[str]) -> list[RaterRun]:
    """One ``RaterRun`` per faithfulness label of ``run``."""
    summaries = run.read_json(SUMMARIES_FILE)
    claims = run.read_json(CLAIMS_FILE)
    resolved: Any = None
    if not any(run.params.get(f"metrics.{x}.{k}") for x in labels for k in ("method", "rater")):
        text = run.read_text("config.yaml")  # a default is not a param
        resolved = yaml.safe_load(text) if text else None
    out = []
    for label in labels:
        key = f"{label}/{FAITHFUL}"
        judges_claims = any(f"{label}/supported" in v for v in run.values.values())
        out.append(
            RaterRun(
                run.run_id,
                run.start_time,
                label,
                method_of(run, label, resolved if isinstance(resolved, dict) else None),
                judge_of(run),
                summaries if isinstance(summaries, dict) else {},
                {doc: v.get(key, math.nan) for doc, v in run.values.items()},
                claims if judges_claims and isinstance(claims, dict) else {},
            )
        )
    return out


# --- matching people's labels and the raters' -------------------------------------------


def people_labels(judgments: Sequence[ClaimsJudgment]) -> tuple[dict[Key, tuple[bool, str]], int]:
    """Summary -> (people's faithful label, difficulty); and how many summaries tied.

    Several annotators of one summary give the majority label; a tie is left out.
    """
    votes: dict[Key, list[bool]] = {}
    difficulty: dict[Key, str] = {}
    for j in judgments:
        if j.faithful is None:
            continue
        key = (j.doc_id, normalized(j.summary))
        votes.setdefault(key, []).append(j.faithful)
        if j.difficulty:
            difficulty.setdefault(key, j.difficulty)
    out: dict[Key, tuple[bool, str]] = {}
    ties = 0
    for key, said in votes.items():
        yes, no = said.count(True), said.count(False)
        if yes == no:
            ties += 1
            continue
        out[key] = (yes > no, difficulty.get(key, ""))
    return out, ties


def by_config(raters: Sequence[RaterRun]) -> dict[Config, dict[Key, tuple[float, RaterRun]]]:
    """Configuration -> summary -> (the newest run's faithful value, that run)."""
    out: dict[Config, dict[Key, tuple[float, RaterRun]]] = {}
    for rater in sorted(raters, key=lambda r: -r.start_time):
        mine = out.setdefault(rater.config, {})
        for doc, value in rater.faithful.items():
            text = rater.summaries.get(doc)
            if isinstance(text, str):
                mine.setdefault((doc, normalized(text)), (value, rater))
    return out


# --- the statistics ---------------------------------------------------------------------


def share_positive(c: st.Confusion) -> float:
    """% of units the rater labels positive (faithful, or supported)."""
    n = c.tp + c.fp + c.fn + c.tn
    return 100.0 * (c.tp + c.fp) / n if n else math.nan


def balanced_accuracy(c: st.Confusion) -> float:
    """The mean of the two classes' recalls, in % (NaN when people used one class only)."""
    if not (c.tp + c.fn) or not (c.tn + c.fp):
        return math.nan
    return 100.0 * (c.tp / (c.tp + c.fn) + c.tn / (c.tn + c.fp)) / 2.0


RULES: tuple[Callable[[st.Confusion], float], ...] = (
    st.kappa,
    share_positive,
    st.precision,
    st.recall,
)


def _row(rater: bool, person: bool) -> list[float]:
    """One unit's (tp, fp, fn, tn) with faithful as the positive class."""
    return [
        float(rater and person),
        float(rater and not person),
        float(person and not rater),
        float(not rater and not person),
    ]


# --- the tables -------------------------------------------------------------------------


def faithfulness_table(
    judgments: Sequence[ClaimsJudgment], raters: Sequence[RaterRun], boot: Boot
) -> tuple[MetaTable | None, list[str]]:
    """Summary level: each rater configuration's labels against people's; notes."""
    people, ties = people_labels(judgments)
    notes = [f"faithfulness: {ties} summaries whose annotators tied, left out"] if ties else []
    rows: list[tuple[Cell, ...]] = []
    for config, values in sorted(by_config(raters).items()):
        matched = [(k, v) for k, (v, _) in values.items() if k in people]
        decided = [(k, v) for k, v in matched if not math.isnan(v)]
        runs = ", ".join(sorted({r.run_id[:8] for _, r in values.values()}))
        name = f"{config[0]} ({config[1]}, {config[2]}; run {runs})"
        if not matched:
            notes.append(
                f"faithfulness: {name} has faithful values for {len(values)} summaries but no "
                "people's summary labels of them (matched by document id and summary text): import "
                "them with python -m runner.annotate import FILE"
            )
            continue
        notes += left_out(name, people, values)
        if len(decided) < len(matched):
            notes.append(
                f"faithfulness: {name}: {len(matched) - len(decided)} of {len(matched)} "
                "labelled summaries undecided (no faithful value), left out"
            )
        if not decided:
            continue
        rows.append((*config, len(decided), *summary_stats(decided, people, boot)))
    if not rows:
        return None, notes
    header = (
        *RATER_COLUMNS,
        "summaries",
        "Cohen's kappa",
        "% faithful",
        "precision",
        "recall",
        "% easy caught",
        "% hard caught",
        "balanced accuracy %",
    )
    caption = (
        "Faithfulness per summary: the rater's label against people's (StorySumm's Results "
        "table): faithful is the positive class of precision and recall; % easy (hard) caught "
        "= of the unfaithful summaries people rated easy (hard), % the rater labels unfaithful; "
        "balanced accuracy = mean of the two classes' recalls; summaries matched by document "
        f"id and summary text; {boot.described('summaries')}."
    )
    table = MetaTable("meta_faithfulness", "Faithfulness: summaries", header, tuple(rows), caption)
    return table, notes


def left_out(
    name: str, people: Mapping[Key, tuple[bool, str]], values: Mapping[Key, tuple[float, RaterRun]]
) -> list[str]:
    """A line for each reason people's labelled summaries have no value of this rater.

    A summary is the rater's when its document id and its text (runs of whitespace as one
    space) are the same; a label of a document the rater judged with another text judged
    another summary (an edited file, another release), and one of a document it never saw
    is outside its runs.
    """
    documents = {doc for doc, _ in values}
    missing = [key for key in people if key not in values]
    differ = [doc for doc, _ in missing if doc in documents]
    absent = [doc for doc, _ in missing if doc not in documents]
    lines = []
    if differ:
        lines.append(
            f"faithfulness: {name}: {len(differ)} of {len(people)} labelled summaries left out, "
            f"their text differs from the summary the rater judged ({_listed(differ)})"
        )
    if absent:
        lines.append(
            f"faithfulness: {name}: {len(absent)} of {len(people)} labelled summaries left out, "
            f"the rater's runs have no summary of their document ({_listed(absent)})"
        )
    return lines


def _listed(docs: Sequence[str]) -> str:
    """The first documents by id, and how many more."""
    shown = ", ".join(repr(d) for d in docs[:LISTED])
    return shown + (f" and {len(docs) - LISTED} more" if len(docs) > LISTED else "")


def summary_stats(
    decided: Sequence[tuple[Key, float]], people: Mapping[Key, tuple[bool, str]], boot: Boot
) -> list[st.Stat]:
    """Kappa, % faithful, precision, recall, % easy and hard caught, balanced accuracy."""
    counts = np.array([_row(v >= 0.5, people[k][0]) for k, v in decided])
    stats = [boot.run(len(decided), st.pooled(counts, rule)) for rule in RULES]
    for level in ("easy", "hard"):
        wanted = [not people[k][0] and people[k][1] == level for k, _ in decided]
        caught = [float(w and v < 0.5) for w, (_, v) in zip(wanted, decided, strict=True)]
        if any(wanted):
            stats.append(boot.run(len(decided), st.ratio(caught, [float(w) for w in wanted])))
        else:
            stats.append(st.Stat(math.nan, math.nan, math.nan, 0))
    stats.append(boot.run(len(decided), st.pooled(counts, balanced_accuracy)))
    return stats


def people_claims(judgments: Sequence[ClaimsJudgment]) -> dict[Key, list[ClaimsJudgment]]:
    """Summary -> the people's claim-level judgments of it (``unit="claim"``)."""
    out: dict[Key, list[ClaimsJudgment]] = {}
    for j in judgments:
        if j.unit == "claim" and j.claims:
            out.setdefault((j.doc_id, normalized(j.summary)), []).append(j)
    return out


def claim_counts(
    judged: Sequence[ClaimsJudgment], answers: Sequence[Mapping[str, Any]]
) -> tuple[list[float], int]:
    """One summary's pooled (tp, fp, fn, tn) over its claims; and claims whose text differs.

    A claim is a unit per annotator; ``cannot_tell`` and undecided claims are left out.
    """
    by_index = {a.get("index"): a for a in answers if isinstance(a, Mapping)}
    total = [0.0, 0.0, 0.0, 0.0]
    differ = 0
    for j in judged:
        for label in j.claims:
            answer = by_index.get(label.index, by_index.get(str(label.index)))
            if answer is None or label.label == CANNOT_TELL:
                continue
            said = answer.get("supported")
            text = answer.get("claim")
            if isinstance(text, str) and label.text and normalized(text) != normalized(label.text):
                differ += 1
                continue
            if not isinstance(said, bool):
                continue
            row = _row(said, label.label == SUPPORTED)
            total = [a + b for a, b in zip(total, row, strict=True)]
    return total, differ


def claim_table(
    judgments: Sequence[ClaimsJudgment], raters: Sequence[RaterRun], boot: Boot
) -> tuple[MetaTable | None, list[str]]:
    """Claim level: each rater configuration's per-claim answers against people's labels."""
    people = people_claims(judgments)
    notes: list[str] = []
    rows: list[tuple[Cell, ...]] = []
    for config, values in sorted(by_config([r for r in raters if r.claims]).items()):
        units: list[list[float]] = []
        differ = 0
        for key, (_, rater) in sorted(values.items()):
            if key not in people or key[0] not in rater.claims:
                continue
            counts, mismatched = claim_counts(people[key], rater.claims[key[0]])
            differ += mismatched
            if sum(counts):
                units.append(counts)
        if differ:
            notes.append(
                f"faithfulness claims: {config[0]} ({config[1]}, {config[2]}): {differ} claims "
                "whose text differs from the people's claim of the same index, left out"
            )
        if not units:
            continue
        pooled = np.array(units)
        stats = [boot.run(len(units), st.pooled(pooled, rule)) for rule in RULES]
        stats.append(boot.run(len(units), st.pooled(pooled, balanced_accuracy)))
        rows.append((*config, len(units), int(pooled.sum()), *stats))
    if not rows:
        return None, notes
    header = (
        *RATER_COLUMNS,
        "summaries",
        "claims",
        "Cohen's kappa",
        "% supported",
        "precision",
        "recall",
        "balanced accuracy %",
    )
    caption = (
        "Faithfulness per claim: the rater's supported/not against people's labels (FABLES): "
        "only Yes (supported) is faithful, PartialSupport and No are not, Inapplicable (cannot "
        "tell) and undecided claims are left out; supported is the positive class; counts "
        f"pooled over claims, {boot.described('summaries')}."
    )
    table = MetaTable(
        "meta_faithfulness_claims", "Faithfulness: claims", header, tuple(rows), caption
    )
    return table, notes


def summarizer_table(judgments: Sequence[ClaimsJudgment], boot: Boot) -> MetaTable | None:
    """People's claim labels per summarizer: % of all claims given each label."""
    per_system: dict[str, list[Counter[str]]] = {}
    for j in judgments:
        if j.unit == "claim" and j.claims:
            per_system.setdefault(j.system, []).append(Counter(c.label for c in j.claims))
    if not per_system:
        return None
    rows: list[tuple[Cell, ...]] = []
    for system, units in sorted(per_system.items()):
        totals = [float(sum(u.values())) for u in units]
        stats = [
            boot.run(len(units), st.ratio([float(u[label]) for u in units], totals))
            for label in CLAIM_LABELS
        ]
        rows.append((system, len(units), int(sum(totals)), *stats))
    header = ("system", "summaries", "claims", *(f"% {label}" for label in CLAIM_LABELS))
    caption = (
        "People's claim labels per summarizer: % of all the system's claims given each label "
        "(FABLES' faithfulness per summarizer is % supported, i.e. labelled Yes, among all "
        "claims, Inapplicable included); one unit per annotator's judgment of a summary, "
        f"{boot.described('summaries')}."
    )
    title = "Faithfulness per summarizer (people)"
    return MetaTable("meta_faithfulness_systems", title, header, tuple(rows), caption)


def faithfulness_tables(
    judgments: Sequence[Any], raters: Sequence[RaterRun], boot: Boot
) -> tuple[list[MetaTable], list[str]]:
    """Every faithfulness table the data supports, and notes.

    Nothing when there is no faithfulness rater and no people's claims judgment, so the
    other meta output stays as it was.
    """
    people = [j for j in judgments if isinstance(j, ClaimsJudgment)]
    if not people and not raters:
        return [], []
    if not people:
        notes = [
            f"faithfulness: {r.label} in run {r.run_id[:8]} has faithful values but no people's "
            "labels to compare with: import them with python -m runner.annotate import FILE"
            for r in raters
        ]
        return [], notes
    summary, notes = faithfulness_table(people, raters, boot)
    claims, claim_notes = claim_table(people, raters, boot)
    systems = summarizer_table(people, boot)
    tables = [t for t in (summary, claims, systems) if t is not None]
    return tables, [*notes, *claim_notes]


def meta_tables(inputs: MetaInput) -> MetaTables:
    """The faithfulness tables of ``python -m runner.report meta=true`` (``runner.api.meta``)."""
    raters = read_raters(inputs.runs)
    tables, notes = faithfulness_tables(inputs.judgments, raters, inputs.boot)
    if inputs.ppi:
        claims = [j for j in inputs.judgments if isinstance(j, ClaimsJudgment)]
        people, _ = people_labels(claims)
        table, more = ppi_table(people, by_config(raters), inputs.boot)
        tables += [table] if table else []
        notes += more
    return MetaTables(tuple(tables), tuple(notes))
