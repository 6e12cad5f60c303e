"""Prompt files with named ``{slots}``, checked once in a metric's setup: ``runner.api.slots``.

Part of the plugin API (versioned with ``runner.api``), as the built-in metrics use it.

BooookScore's prompts have two positional slots; the G-Eval, vagueness and repetitiveness
prompts have named ones (``{document}``, ``{summary}``, ``{criteria}``, ...), because a
user's prompt may order them differently. A file is parsed with ``str.format``'s own
grammar (literal braces are written ``{{ }}``) and rejected, with a one-line
``ConfigError`` naming the file and the slot, when it lacks a slot the metric fills or has
one it does not know: a typo in a slot name would otherwise send the judge a prompt with
a hole in it, and no error would ever say so.

:meth:`SlotTemplate.messages` cuts the filled prompt into a shared prefix (marked
``cache=True``) and the rest, right after the last of the ``shared`` slots that comes
before any other slot: every call about one document then begins with the same bytes,
which is what provider prefix caches (llama.cpp's KV cache, Anthropic's cache_control,
OpenAI's automatic caching) need.
"""

from __future__ import annotations

import string
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.api.errors import ConfigError
from runner.api.types import Message


@dataclass(frozen=True)
class SlotTemplate:
    """A prompt as literal pieces and the slot that follows each (None after the last)."""

    path: str
    """Where it was read from (for messages)."""
    pieces: tuple[tuple[str, str | None], ...]
    """(literal text, slot name or None), in order."""

    @property
    def slots(self) -> tuple[str, ...]:
        """The slot names, in order of appearance."""
        return tuple(name for _, name in self.pieces if name is not None)

    def fill(self, values: Mapping[str, str]) -> str:
        """The whole prompt as one string."""
        return "".join(text + (values[name] if name else "") for text, name in self.pieces)

    def messages(self, values: Mapping[str, str], shared: Collection[str] = ()) -> list[Message]:
        """One user message, or two when a shared prefix ends before the other slots."""
        cut = self._cut(shared)
        if cut == 0:
            return [Message("user", self.fill(values))]
        head = SlotTemplate(self.path, self.pieces[:cut]).fill(values)
        tail = SlotTemplate(self.path, self.pieces[cut:]).fill(values)
        if not tail.strip():
            return [Message("user", head, cache=True)]
        return [Message("user", head, cache=True), Message("user", tail.lstrip("\n"))]

    def _cut(self, shared: Collection[str]) -> int:
        """Pieces in the shared prefix: up to the last shared slot before any other slot."""
        cut = 0
        for index, (_, name) in enumerate(self.pieces):
            if name is None or name not in shared:
                break
            cut = index + 1
        return cut


def parse_slots(
    text: str, path: str, required: Collection[str], optional: Collection[str] = ()
) -> SlotTemplate:
    """Split ``text`` at its named slots; every required slot present, no unknown one."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        raise ConfigError(f"prompt {path}: {err}; write literal braces as {{{{ }}}}") from err
    pieces: list[tuple[str, str | None]] = []
    for literal, name, spec, conv in parsed:
        if name is not None and (spec or conv):
            raise ConfigError(f"prompt {path}: slot {{{name}}} takes no format spec or conversion")
        if name is not None and name not in {*required, *optional}:
            known = ", ".join("{" + s + "}" for s in sorted({*required, *optional}))
            raise ConfigError(
                f"prompt {path}: unknown slot {{{name}}}; the slots are {known} "
                "(write literal braces as {{ }})"
            )
        pieces.append((literal, name))
    found = {name for _, name in pieces if name}
    missing = sorted(set(required) - found)
    if missing:
        raise ConfigError(f"prompt {path} lacks the slot {{{missing[0]}}}; add it where it belongs")
    return SlotTemplate(path, _merge(pieces))


def _merge(pieces: list[tuple[str, str | None]]) -> tuple[tuple[str, str | None], ...]:
    """Join literal-only pieces (an escaped brace splits a literal) into their neighbour."""
    out: list[tuple[str, str | None]] = []
    pending = ""
    for literal, name in pieces:
        pending += literal
        if name is not None:
            out.append((pending, name))
            pending = ""
    if pending or not out:
        out.append((pending, None))
    return tuple(out)


def load_slots(
    path: str | None,
    default: Path,
    key: str,
    required: Collection[str],
    optional: Collection[str] = (),
) -> SlotTemplate:
    """The template at ``path`` (``default`` when None).

    Read once in a metric's setup; ``key`` names the config key in errors.
    """
    chosen = Path(path).expanduser() if path else default
    if not chosen.is_file():
        slots = ", ".join("{" + s + "}" for s in required)
        raise ConfigError(f"{key}={path} does not exist; give a prompt file with the slots {slots}")
    resolved = str(chosen.resolve())
    text = Path(resolved).read_text(encoding="utf-8").rstrip("\n")
    return parse_slots(text, resolved, required, optional)
