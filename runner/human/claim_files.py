"""People's faithfulness files read by the metric that owns their format (``HUMAN_FILES``).

A metric module declares the file formats of people's claim and summary labels it knows
(``runner.api.HumanFile``: the StorySumm and FABLES releases...). The core names no metric:
``python -m runner.annotate import FILE`` asks each declared format whether it
``recognizes`` the file (by its shape) and reads it with the one that does. Only metrics
that are built in or installed (entry points of ``summarization_runner.metrics``) are asked:
a loose module in the folder is a study's own code, imported only when a job names it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from runner.api.human_format import HumanFile
from runner.human.judgments import ClaimsJudgment, HumanDataError, check_claim_labels
from runner.plugins.errors import PluginError
from runner.plugins.registry import available, load


@dataclass(frozen=True)
class ClaimFormat:
    """One declared format and the metric that declares it."""

    metric: str
    """The metric's name as the registry finds it (its entry point's name)."""
    file: HumanFile
    built_in: bool

    @property
    def label(self) -> str:
        """The format as a message names it: ``StorySumm release (metrics=faithfulness)``."""
        return f"{self.file.name} (metrics={self.metric})"


@cache
def claim_formats() -> tuple[ClaimFormat, ...]:
    """Every ``HUMAN_FILES`` format of the built-in and installed metrics, by metric name.

    A metric that cannot be imported is left out: its formats cannot read anything, and
    another metric's broken install must not stop people's files being read.
    """
    found = []
    for name, plugin in sorted(available("metrics").items()):
        try:
            module = load(plugin)
        except PluginError:
            continue
        for file in getattr(module, "HUMAN_FILES", ()) or ():
            if isinstance(file, HumanFile):
                found.append(ClaimFormat(name, file, plugin.built_in))
    return tuple(found)


def built_in_claims_owner() -> str:
    """The one built-in metric declaring ``HUMAN_FILES`` (a judgment naming no metric)."""
    owners = sorted({f.metric for f in claim_formats() if f.built_in})
    if len(owners) != 1:
        raise HumanDataError(
            f"{len(owners)} built-in metrics declare faithfulness file formats ({owners}); "
            "the judgments must name the metric that owns them"
        )
    return owners[0]


def recognizing(path: Path) -> list[ClaimFormat]:
    """The declared formats that recognize ``path`` (a recognizer that raises does not)."""
    hits = []
    for fmt in claim_formats():
        try:
            if fmt.file.recognizes(path):
                hits.append(fmt)
        except Exception:  # noqa: BLE001, S112 - a recognizer must not decide by failing
            continue
    return hits


def read_claim_file(path: Path, fmt: ClaimFormat) -> tuple[list[ClaimsJudgment], list[str]]:
    """The file's judgments (each naming ``fmt``'s metric when its reader named none), notes.

    Every claim label is checked against ``CLAIM_LABELS`` here, before anything is recorded.
    """
    judgments, notes = fmt.file.read(path)
    named = [j if j.metric else replace(j, metric=fmt.metric) for j in judgments]
    check_claim_labels(named, path)
    return named, list(notes)
