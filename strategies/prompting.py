"""Prompt files: read and fill (``runner/config/fingerprint.py`` hashes them).

Prompts live as plain text beside the strategies (``strategies/prompts/<set>/<name>.txt``)
with positional ``{}`` slots, exactly as the papers print them, so they can be diffed
against the source and logged as artifacts of each run.
"""

from __future__ import annotations

from pathlib import Path

PROMPT_ROOT = Path(__file__).parent / "prompts"


def prompt_path(folder: str, name: str, root: Path = PROMPT_ROOT) -> Path:
    """Path of prompt ``name`` in ``folder`` (e.g. 'hier/paper', 'merge')."""
    return root / folder / f"{name}.txt"


def load_prompt(folder: str, name: str, root: Path = PROMPT_ROOT) -> str:
    """The prompt's text, trailing newline removed (the model sees it verbatim)."""
    return prompt_path(folder, name, root).read_text(encoding="utf-8").rstrip("\n")


def fill(template: str, *values: object) -> str:
    """Fill the template's ``{}`` slots in order; braces inside values are left alone."""
    return template.format(*values)
