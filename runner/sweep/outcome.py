"""What a sweep job hands back to the sweeper: a small typed value, not a module global.

Hydra's launchers bring each job's return value back to the sweeping process as
``JobReturn.return_value`` (the basic launcher in this process; the joblib and Ray launchers
pickle it back from their workers), so a job's failure travels as a value whichever launcher
ran it. ``failure_message`` turns a sweep's outcomes into the one line its exit status needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class JobOutcome:
    """How one job of a sweep ended."""

    run_name: str
    """The job's overrides as the user wrote them ('model.temperature=0.9'), or '(defaults)'."""
    error: str = ""
    """The one-line error that stopped the job; empty when it finished."""

    @property
    def ok(self) -> bool:
        """True when the job finished (or its cell was already done)."""
        return not self.error

    def describe(self) -> str:
        """'<run name>: <error>', as the parent run's failure tag and the exit line name it."""
        return f"{self.run_name}: {self.error}"


def failures(values: Iterable[object]) -> list[JobOutcome]:
    """The failed outcomes among jobs' return values (other values are not ours: skipped)."""
    return [v for v in values if isinstance(v, JobOutcome) and not v.ok]


def failure_message(failed: list[JobOutcome]) -> str:
    """The line a sweep with failed jobs ends with (exit status 1)."""
    return (
        f"error: {len(failed)} job(s) of the sweep failed, so its parent run is FAILED "
        f"(reports leave failed runs out); first: {failed[0].describe()}"
    )
