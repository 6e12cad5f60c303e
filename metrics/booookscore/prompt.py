"""BooookScore prompt files and the messages built from them.

A prompt file has exactly two positional ``{}`` slots, the summary then the sentence (or,
in batched mode, the numbered sentences), filled as ``str.format`` would fill them
(literal braces are written ``{{ }}``). That is the form of the paper's M.4 prompt and of
the authors' released 42-annotation prompt, so either loads unchanged.

The filled prompt is cut right after the summary into two user messages: the long shared
part (instructions, examples, summary) first, marked ``cache=True``, and the short
per-sentence part last. Every call about one summary then shares a byte-identical
prefix, which is what provider prefix caching needs: llama.cpp's KV-cache reuse for the
local judge, Anthropic's ``cache_control`` (the gateway turns the mark into it), OpenAI's
automatic caching.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

from runner.api import ConfigError, Message

PROMPT_DIR = Path(__file__).parent.parent / "prompts" / "booookscore"
SENTENCE_PROMPT = PROMPT_DIR / "sentence.txt"
"""Appendix M.4 verbatim, with the seed's partial examples plus one written for this project."""
BATCH_PROMPT = PROMPT_DIR / "batch.txt"
"""Batched mode: the same definitions, k numbered sentences, a JSON-list answer."""

REASK = (
    "Your answer could not be read ({error}). Answer again about the same sentence, in "
    "exactly this form and using only the eight types of confusion defined above:\n"
    "Questions: <your clarifying questions, or no confusion>\n"
    "Types: <comma-separated types of confusion, or no confusion>"
)
"""The follow-up turn after an unreadable per-sentence answer (our wording)."""


@dataclass(frozen=True)
class Template:
    """A prompt cut around its two slots: ``head {summary} middle {item} tail``."""

    path: str
    """Where it was read from (for messages)."""
    head: str
    """Literal text before the summary slot."""
    middle: str
    """Literal text between the summary and the sentence slots."""
    tail: str
    """Literal text after the sentence slot."""

    def fill(self, summary: str, item: str) -> str:
        """The whole prompt as one string (what ``str.format`` would give)."""
        return f"{self.head}{summary}{self.middle}{item}{self.tail}"

    def messages(self, summary: str, item: str) -> list[Message]:
        """Shared part first (marked for caching), the sentence part last."""
        return [
            Message("user", f"{self.head}{summary}", cache=True),
            Message("user", f"{self.middle}{item}{self.tail}".lstrip("\n")),
        ]


def parse_template(text: str, path: str = "<string>") -> Template:
    """Split a prompt at its two positional slots; reject anything else."""
    try:
        pieces = list(string.Formatter().parse(text))
    except ValueError as err:
        raise ConfigError(f"prompt {path}: {err}; write literal braces as {{{{ }}}}") from err
    literals = [""]  # literal text around the slots; an escaped brace splits a piece too
    fields = []
    for literal, name, spec, conv in pieces:
        literals[-1] += literal
        if name is not None:
            fields.append((name, spec, conv))
            literals.append("")
    if len(fields) != 2 or [f[0] for f in fields] not in (["", ""], ["0", "1"]):
        raise ConfigError(
            f"prompt {path} must have exactly two positional slots {{}} (summary, then sentence); "
            f"it has {len(fields)}: {[f[0] for f in fields]}"
        )
    if any(spec or conv for _, spec, conv in fields):
        raise ConfigError(f"prompt {path}: slots take no format spec; write plain {{}}")
    tail = literals[2] if len(literals) > 2 else ""
    return Template(path=path, head=literals[0], middle=literals[1], tail=tail)


def load_template(path: str | None, default: Path, key: str) -> Template:
    """The template at ``path`` (``default`` when None).

    Read once per job by the metric's setup; ``key`` names the config key in errors.
    """
    chosen = Path(path).expanduser() if path else default
    if not chosen.is_file():
        raise ConfigError(f"{key}={path} does not exist; give a prompt file with two {{}} slots")
    resolved = str(chosen.resolve())
    return parse_template(Path(resolved).read_text(encoding="utf-8").rstrip("\n"), resolved)


def numbered(sentences: list[str]) -> str:
    """'1. first', '2. second', one a line: how batched mode lists its sentences."""
    return "\n".join(f"{n}. {s}" for n, s in enumerate(sentences, start=1))


def reask_messages(base: list[Message], answer: str, error: str) -> list[Message]:
    """The same request followed by the unreadable answer and a request to fix its form."""
    return [
        *base,
        Message("assistant", answer or "(empty)"),
        Message("user", REASK.format(error=error)),
    ]
