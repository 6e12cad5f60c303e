"""A cell's estimate as ranges: made again with its guesses at their bounds.

Each quantity the estimate cannot know (an answer's length, a summary's sentences, SummIt's
rounds, a job's own seconds) is taken through a ``Scenario`` with a point value and a cheap
and a dear end (``guide.py``). Every figure grows with each quantity, so the estimate with
every quantity at its cheap end is the range's low end, with every one at its dear end the
high end; what is exact (documents, chunks, hier's levels, incremental's steps, the
sentences of given summaries) comes out the same at both ends and prints as one number.
Each quantity is then moved alone, the others at their point values, which names the part
of the range it drives.
"""

from __future__ import annotations

from dataclasses import replace

from runner.api.types import WorkItem
from runner.config.run_config import RunConfig
from runner.estimate.cell import CellEstimate, estimate_cell
from runner.estimate.guide import Scenario, Side
from runner.estimate.span import Driver, Figures, Span


def ranged(config: RunConfig, items: list[WorkItem], name: str) -> CellEstimate:
    """The cell's point estimate with its span, each role's span and each guess's span."""
    point = estimate_cell(config, items, name)

    def at(sides: dict[str, Side]) -> CellEstimate:
        return estimate_cell(config, items, name, Scenario(sides))

    ends = [at({"*": "cheap"}), at({"*": "dear"})]
    drivers = []
    for key, text in point.guesses:
        alone = [at({key: "cheap"}), at({key: "dear"})]
        drivers.append(Driver(key, text, Span.around(point.figures, *[c.figures for c in alone])))
        ends += alone
    every = [point, *ends]
    roles = tuple(Span.around(*[_role(c, r.role) for c in every]) for r in point.roles)
    span = Span.around(*[c.figures for c in every])
    return replace(point, span=span, drivers=tuple(drivers), role_spans=roles)


def _role(cell: CellEstimate, role: str) -> Figures:
    """One role's figures in ``cell`` (zero when it makes no call there)."""
    return next((r.figures for r in cell.roles if r.role == role), Figures())
