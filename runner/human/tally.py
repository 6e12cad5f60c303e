"""Counts the papers report from human judgments.

- ``preference_counts``: Table 4 of the BooookScore paper, per criterion how often each of
  two systems was preferred and how often neither (draw), how many comparisons flagged a
  contradiction, and per system how many flagged an omission;
- ``precision``: Appendix J's annotation precision per source (who made the annotations
  judged): (Agree + Partially agree) / all verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from runner.human.judgments import CRITERIA, DRAW, VERDICTS, HumanDataError, Preference, Verdict


@dataclass(frozen=True)
class PreferenceCounts:
    """Table 4's counts for one pair of systems."""

    systems: tuple[str, str]
    wins: dict[str, dict[str, int]]
    """Criterion -> {system or ``DRAW``: comparisons}."""
    contradiction: int
    """Comparisons whose annotator answered Yes to "contradiction"."""
    omission: dict[str, int]
    """System -> comparisons whose annotator said its summary omits something important."""
    comparisons: int

    def as_table4(self) -> dict[str, Any]:
        """The counts in the shape of the authors' ``*.counts.json``.

        ``{"Detail": {sys: n, "draw": n}, ..., "Contradiction": n, "<Sys> Omission": n}``.
        """
        table: dict[str, Any] = {c.capitalize(): dict(n) for c, n in self.wins.items()}
        table["Contradiction"] = self.contradiction
        for system, n in self.omission.items():
            table[f"{system[:1].upper()}{system[1:]} Omission"] = n
        return table


def preference_counts(
    preferences: Iterable[Preference], systems: tuple[str, str]
) -> PreferenceCounts:
    """Table 4's counts of comparisons between ``systems`` (either order on screen).

    A comparison of another pair, or one missing a criterion, is an error: a tally that
    silently left it out would not be the table the reader thinks it is.
    """
    wins = {c: {systems[0]: 0, systems[1]: 0, DRAW: 0} for c in CRITERIA}
    omission = dict.fromkeys(systems, 0)
    contradiction = comparisons = 0
    for p in preferences:
        where = f"book {p.doc_id!r} (annotator {p.annotator})"
        if set(p.systems) != set(systems):
            raise HumanDataError(
                f"{where}, field 'systems': compares {list(p.systems)}, not {list(systems)}; "
                "tally each pair of systems apart"
            )
        for criterion in CRITERIA:
            choice = p.choices.get(criterion)
            if choice not in wins[criterion]:
                raise HumanDataError(
                    f"{where}, field {criterion!r}: {choice!r} is neither system nor draw; "
                    "read the judgments again with read_labelstudio"
                )
            wins[criterion][choice] += 1
        contradiction += p.flags.get("contradiction", False)
        for system in systems:
            omission[system] += p.flags.get(f"omission:{system}", False)
        comparisons += 1
    return PreferenceCounts(systems, wins, contradiction, omission, comparisons)


@dataclass(frozen=True)
class Precision:
    """Appendix J's precision of one source's annotations."""

    source: str
    agreed: int
    """Verdicts ``Agree`` or ``Partially agree``."""
    total: int

    @property
    def value(self) -> float:
        """The share agreed / total (NaN with no verdict)."""
        return self.agreed / self.total if self.total else float("nan")


def precision(verdicts: Iterable[Verdict]) -> dict[str, Precision]:
    """Source -> its precision, sources in order of first appearance."""
    counts: dict[str, list[int]] = {}
    for v in verdicts:
        if v.verdict not in VERDICTS:
            raise HumanDataError(
                f"book {v.doc_id!r}, field 'verdict': {v.verdict!r} is not one of {VERDICTS}; "
                "fix the verdict in the file read"
            )
        agreed, total = counts.setdefault(v.source, [0, 0])
        counts[v.source] = [agreed + (v.verdict != "Don't agree"), total + 1]
    return {s: Precision(s, agreed, total) for s, (agreed, total) in counts.items()}
