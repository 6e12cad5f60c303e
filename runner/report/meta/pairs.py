"""The meta-evaluation tables of pairwise comparisons.

Appendix J's verdicts are BooookScore's own table (its ``meta_tables``:
``metrics/booookscore/meta.py``).

- ``preference_table``: Table 4's shape per pair of systems: per criterion the % of
  comparisons preferring each system and the % of draws; the % with a contradiction and,
  per system, the % where its summary omits something; bootstrapped over comparisons;
- ``ordering_table``: how often each metric orders a compared pair as the people did, per
  criterion. A metric prefers the summary with its better per-document value, the way its
  plugin declares (``Value.better``: higher, or lower for an error rate); a value declared
  with no direction (a length) is not compared, and an undeclared one is read as higher is
  better, said in its row. Comparisons the people called a draw and pairs the metric scores
  equal are counted apart, never as agreement or disagreement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runner.api import meta as st
from runner.api.meta import Boot, Cell, MetaTable, run_label
from runner.human.judgments import CRITERIA, DRAW, VERDICTS, Preference
from runner.reliability.panel import panel_member
from runner.report.meta.read import MetaInputs
from runner.tracking.reader import RunRecord

AGREEING = VERDICTS[:2]
"""Agree and Partially agree: what Appendix J's precision counts."""
CONTRADICTION = "contradiction"
OMISSION = "omission:"
"""``Preference.flags`` key prefix of the omission flag of one system."""


def _ci_text(boot: Boot, units: str) -> str:
    return (
        f"value [{boot.confidence:.0%} CI], percentile bootstrap over {units} "
        f"({boot.resamples} resamples, seed {boot.seed})"
    )


def _pairs(
    preferences: Sequence[Preference], judged: Mapping[str, RunRecord]
) -> dict[tuple[str, str], list[Preference]]:
    """Comparisons grouped by their pair of systems, A before B by label (run name, id)."""
    out: dict[tuple[str, str], list[Preference]] = {}
    for p in preferences:
        a, b = sorted(p.systems, key=lambda s: (run_label(s, judged), s))
        out.setdefault((a, b), []).append(p)
    return out


def _share(boot: Boot, hits: Sequence[bool]) -> st.Stat:
    """The % of ``hits`` that are true, bootstrapped over them."""
    return boot.run(len(hits), st.ratio([float(h) for h in hits], [1.0] * len(hits)))


def preference_table(inputs: MetaInputs, boot: Boot) -> MetaTable | None:
    """Table 4's shape: per pair of systems and criterion, % for A, for B, draws."""
    preferences = [j for j in inputs.judgments if isinstance(j, Preference)]
    if not preferences:
        return None
    rows: list[tuple[Cell, ...]] = []
    for (a, b), found in _pairs(preferences, inputs.judged).items():
        names = (run_label(a, inputs.judged), run_label(b, inputs.judged))
        for criterion in CRITERIA:
            said = [p.choices[criterion] for p in found if criterion in p.choices]
            if said:
                shares = [_share(boot, [c == who for c in said]) for who in (a, b, DRAW)]
                rows.append((*names, criterion, len(said), *shares, None))
        flagged = [p.flags[CONTRADICTION] for p in found if CONTRADICTION in p.flags]
        if flagged:
            rows.append(
                (*names, CONTRADICTION, len(flagged), None, None, None, _share(boot, flagged))
            )
        omits = [[p.flags[OMISSION + s] for p in found if OMISSION + s in p.flags] for s in (a, b)]
        if any(omits):
            sides = [_share(boot, o) if o else None for o in omits]
            rows.append((*names, "omission", max(map(len, omits)), *sides, None, None))
    header = ("system A", "system B", "criterion", "comparisons", "% A", "% B", "% draw", "% yes")
    caption = (
        "Pairwise comparisons (BooookScore Table 4's shape): % of comparisons preferring each "
        "system or calling a draw; contradiction: % answered yes; omission: % where that "
        f"system's summary omits something; {_ci_text(boot, 'comparisons')}."
    )
    return MetaTable("meta_preferences", "Pairwise preferences", header, tuple(rows), caption)


def directions(inputs: MetaInputs, metrics: Sequence[str]) -> dict[str, str | None]:
    """Which way each metric is better, as the judged runs' plugins declare it.

    'higher' or 'lower'; None for a value declared without a direction; 'higher
    (undeclared)' for a value no plugin declared (today's reading, named as such).
    """
    facts = inputs.values
    out: dict[str, str | None] = {}
    for metric in metrics:
        member = panel_member(metric)  # a panel member's value: as the metric declares it
        found = facts.get(member[0] if member else metric)
        out[metric] = "higher (undeclared)" if found is None else found.better
    return out


def undirected_notes(inputs: MetaInputs, metrics: Sequence[str]) -> list[str]:
    """A line per metric the pairs table leaves out because no direction is better."""
    return [
        f"not compared on pairs: {metric} has no better direction (its plugin declares "
        "Value(better=None)): which summary it prefers cannot be told"
        for metric, better in directions(inputs, metrics).items()
        if better is None and any(_compared(inputs, metric, c) for c in CRITERIA)
    ]


def _compared(inputs: MetaInputs, metric: str, criterion: str) -> bool:
    return ordering(inputs, metric, criterion)[3] > 0


def ordering(
    inputs: MetaInputs, metric: str, criterion: str, lower_is_better: bool = False
) -> tuple[list[bool], int, int, int]:
    """(agreement of each decided comparison, human draws, metric ties, comparisons).

    A comparison counts when both systems' runs have ``metric`` for the document; the
    metric prefers the higher value, or the lower with ``lower_is_better``.
    """
    agree: list[bool] = []
    draws = ties = total = 0
    for p in inputs.judgments:
        if not isinstance(p, Preference) or criterion not in p.choices:
            continue
        values = [inputs.scores.get(s, {}).get(p.doc_id, {}).get(metric) for s in p.systems]
        if (
            values[0] is None
            or values[1] is None
            or values[0] != values[0]
            or values[1] != values[1]
        ):
            continue
        total += 1
        choice = p.choices[criterion]
        if choice == DRAW:
            draws += 1
        elif values[0] == values[1]:
            ties += 1
        else:
            first = values[0] < values[1] if lower_is_better else values[0] > values[1]
            agree.append(p.systems[0 if first else 1] == choice)
    return agree, draws, ties, total


def ordering_table(inputs: MetaInputs, metrics: Sequence[str], boot: Boot) -> MetaTable | None:
    """How often each metric orders a compared pair as the people did, per criterion."""
    rows: list[tuple[Cell, ...]] = []
    for metric, better in directions(inputs, metrics).items():
        if better is None:
            continue  # undirected_notes names it
        for criterion in CRITERIA:
            agree, draws, ties, total = ordering(inputs, metric, criterion, better == "lower")
            if total:
                stat = _share(boot, agree) if agree else None
                counts = (total, sum(agree), len(agree) - sum(agree), ties, draws)
                rows.append((metric, better, criterion, *counts, stat))
    if not rows:
        return None
    header = (
        "metric",
        "better",
        "criterion",
        "comparisons",
        "agree",
        "disagree",
        "metric tie",
        "human draw",
        "% agree",
    )
    caption = (
        "A metric prefers the summary with its better value (column better: as its plugin "
        "declares, Value.better; 'undeclared' read as higher); % agree is over the "
        "comparisons with a winner on both sides (people's draws and the metric's ties "
        "counted apart); "
        f"{_ci_text(boot, 'those comparisons')}."
    )
    return MetaTable("meta_orderings", "Metric vs people on pairs", header, tuple(rows), caption)
