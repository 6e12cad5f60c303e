"""``chunk`` against the summarizer's context window: the one check, wherever it is made.

The preflight makes it when the window is known without litellm, ``runner.run.prepare`` once
the gateway has asked litellm, and ``estimate=true`` before it counts anything: the same rule
and the same one line each time.
"""

from __future__ import annotations

from runner.api.errors import ConfigError
from runner.config.run_config import RunConfig


def check_chunk(chunk: int, window: int, name: str) -> None:
    """``chunk`` must fit the summarizer's window (one line naming both, and the fix)."""
    if chunk > window:
        raise ConfigError(
            f"chunk={chunk} exceeds the {window}-token context of '{name}'; lower chunk"
        )


def check_known_window(config: RunConfig) -> int | None:
    """``chunk`` checked against the summarizer's window when it is known without litellm.

    Returns that window; None when only litellm knows it (then ``runner.run.prepare`` checks).
    """
    spec = config.roles.get("model")
    window = spec.known_window if spec is not None else None
    if spec is not None and window:
        check_chunk(config.chunk, window, spec.name)
    return window
