"""A setting's valid range, declared on its dataclass field and checked before anything runs.

A value out of range (``model.temperature=5``, ``model.retry.max_attempts=0``) would otherwise
be recorded as a parameter of a run whose provider rejected it, clamped it or ignored it. The
range sits beside the field (``field(metadata=valid(Range(...)))``), so the check, the
error's wording and the config reference (``runner/config/reference``) read one declaration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from runner.api.errors import ConfigError

METADATA_KEY = "range"


@dataclass(frozen=True)
class Range:
    """``low <= value <= high`` (``low < value`` when ``above``); None is no bound."""

    low: float | None = None
    high: float | None = None
    example: float | int | None = None
    """A valid value, shown in the error line."""
    above: bool = False
    """The low bound itself is out (a wait of 0 s, a penalty of 0)."""
    null: str = ""
    """What null means for the key (``no limit``), when null is allowed and worth saying."""

    def holds(self, value: float) -> bool:
        """True when ``value`` is within the range."""
        if math.isnan(value):
            return False
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        """The range in words: ``from 0 to 2``, ``at least 1``, ``above 0``."""
        if self.low is not None and self.high is not None:
            text = f"from {self.low:g} to {self.high:g}"
        elif self.low is not None:
            text = f"above {self.low:g}" if self.above else f"at least {self.low:g}"
        elif self.high is not None:
            text = f"at most {self.high:g}"
        else:
            text = "any number"
        return f"{text}, or null for {self.null}" if self.null else text

    def check(self, key: str, value: Any, whose: str = "") -> None:
        """Raise the one-line ``ConfigError`` for a number out of range.

        ``whose`` names a narrower range's owner (``Anthropic's models``).
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)) or self.holds(value):
            return
        owner = f" for {whose}" if whose else ""
        example = "" if self.example is None else f"; e.g. {key}={self.example:g}"
        raise ConfigError(f"{key}={value} is out of range: {self.describe()}{owner}{example}")


def valid(values: Range) -> dict[str, Range]:
    """A field's metadata declaring its range: ``field(default=..., metadata=valid(...))``."""
    return {METADATA_KEY: values}


def range_of(metadata: Any) -> Range | None:
    """The range a field's metadata declares, if any."""
    found = metadata.get(METADATA_KEY)
    return found if isinstance(found, Range) else None
