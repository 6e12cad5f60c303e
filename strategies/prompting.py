"""Prompt files: read and fill (``runner/config/fingerprint.py`` hashes them).

Prompts live as plain text beside the strategies (``strategies/prompts/<set>/<name>.txt``)
with positional ``{}`` slots, exactly as the papers print them, so they can be diffed
against the source and logged as artifacts of each run.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from runner.api import ConfigError

PROMPT_ROOT = Path(__file__).parent / "prompts"
REFERENCE_SET = "paper"


def prompt_path(folder: str, name: str, root: Path = PROMPT_ROOT) -> Path:
    """Path of prompt ``name`` in ``folder`` (e.g. 'hier/paper', 'merge')."""
    return root / folder / f"{name}.txt"


def load_prompt(folder: str, name: str, root: Path = PROMPT_ROOT) -> str:
    """The prompt's text, trailing newline removed (the model sees it verbatim)."""
    return prompt_path(folder, name, root).read_text(encoding="utf-8").rstrip("\n")


def fill(template: str, *values: object) -> str:
    """Fill the template's ``{}`` slots in order; braces inside values are left alone."""
    return template.format(*values)


def load_prompt_set(strategy: str, prompts: str, names: Iterable[str]) -> dict[str, str]:
    """Templates ``names`` of ``strategies/prompts/<strategy>/<prompts>/``.

    A name the set lacks falls back to the paper set (e.g. the M.2.1 LLaMA-2 set has no
    compression prompt); a set that does not exist is a config error, not a silent swap.
    """
    folder = PROMPT_ROOT / strategy / prompts
    if not folder.is_dir():
        available = sorted(p.name for p in (PROMPT_ROOT / strategy).iterdir() if p.is_dir())
        raise ConfigError(
            f"strategy.prompts={prompts} has no prompt set for {strategy}; "
            f"available: {', '.join(available)}"
        )
    out = {}
    for name in names:
        chosen = prompts if (folder / f"{name}.txt").is_file() else REFERENCE_SET
        out[name] = load_prompt(str(Path(strategy) / chosen), name)
    return out
