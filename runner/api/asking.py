"""Asking a judge with a checked prompt file: ``runner.api.asking``.

Part of the plugin API (versioned with ``runner.api``), the shared pieces of the article's
alignment / coverage / F1 family (seed 003) and the faithfulness metric. Those metrics ask a
judge for JSON through :func:`runner.api.judging.ask_json` and share how they do it:

- a prompt is a file with *named* slots (``{source}``, ``{claim}``, ...) checked once in
  ``setup`` by ``runner.api.slots`` (shared with G-Eval and the other article metrics): a
  missing or unknown slot is a one-line ``ConfigError`` naming the file and the slot;
- the filled prompt is cut into a shared prefix (instructions, then the source or the
  summary), sent as a user message marked ``cache=True``, and the varying part (the claim,
  the question) as a second message, so llama.cpp's KV cache and Anthropic's prompt cache
  reuse the prefix across a document's calls;
- the room for the source in one call is ``judge.context_window`` minus the prompt's own
  tokens, ``max_tokens`` for the answer and ``room_tokens`` for the varying part and the
  gap between our tokenizer and the judge's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from runner.api.errors import ConfigError
from runner.api.judging import Answer, Usage, ask_json
from runner.api.slots import SlotTemplate, load_slots
from runner.api.types import LLM, Message


@dataclass(frozen=True)
class Prompt:
    """A checked prompt file and the slots of its cached prefix."""

    template: SlotTemplate
    """The file's pieces (``runner.api.slots``: the project's one named-slot parser)."""
    shared: tuple[str, ...]
    """Slots that end the shared prefix (empty: the prompt is one message)."""

    @property
    def path(self) -> str:
        """Where it was read from."""
        return self.template.path

    def messages(self, **values: Any) -> list[Message]:
        """The filled prompt: the shared prefix marked for caching, then the varying part."""
        return self.template.messages({k: str(v) for k, v in values.items()}, self.shared)

    def fixed_text(self) -> str:
        """The prompt with every slot empty: what it costs before any text is added."""
        return self.template.fill(dict.fromkeys(self.template.slots, ""))


def load_prompt(
    path: str | None, default: Path, key: str, slots: tuple[str, ...], shared: tuple[str, ...] = ()
) -> Prompt:
    """Read and check a prompt file once per job (``runner.api.slots.load_slots``).

    ``slots`` are the named slots it must have, and the only ones; ``shared`` those of the
    cached prefix, which must come before the others: a user file that put the claim
    before the source would otherwise lose the prefix cache without a word.
    """
    template = load_slots(path, default, key, required=slots)
    order = template.slots
    if shared and max(order.index(s) for s in shared) > min(
        (order.index(s) for s in slots if s not in shared), default=len(order)
    ):
        others = [s for s in slots if s not in shared]
        raise ConfigError(
            f"prompt {template.path}: {_braced(shared)} must come before {_braced(tuple(others))}"
        )
    return Prompt(template, shared)


def _braced(slots: tuple[str, ...]) -> str:
    return ", ".join("{" + s + "}" for s in slots)


@dataclass(frozen=True)
class Asker:
    """One judge with its answer settings, bound once per job."""

    judge: LLM
    max_attempts: int
    max_tokens: int
    temperature: float | None
    """None: the judge's own (``judge.temperature``, which the run records)."""

    def ask(
        self,
        messages: list[Message],
        check: Callable[[Any], tuple[Any, str]],
        usage: Usage,
        purpose: str,
    ) -> Answer:
        """A checked JSON answer (or an unparsed one, counted in ``usage``)."""
        return ask_json(
            self.judge,
            messages,
            check,
            usage,
            purpose=purpose,
            max_attempts=self.max_attempts,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
        )


class FixedText(Protocol):
    """A prompt that can say how long it is with its slots empty.

    ``Prompt`` here, and other metrics' prompt sets (faithfulness's).
    """

    def fixed_text(self) -> str:
        """The prompt's own text, slots empty."""
        ...


def source_budget(
    judge: LLM, prompt: FixedText, max_tokens: int, room_tokens: int, key: str
) -> int:
    """Tokens of source text one call can carry; a ConfigError when too few are left.

    ``max_tokens``: every answer the call's conversation holds (a reasoning step included).
    """
    fixed = judge.count_tokens(prompt.fixed_text())
    budget = judge.context_window - fixed - max_tokens - room_tokens
    if budget < 64:
        raise ConfigError(
            f"{key}: judge.context_window={judge.context_window} leaves {budget} tokens for the "
            f"text after the prompt ({fixed}), the answers ({max_tokens}) and room_tokens "
            f"({room_tokens}); lower them or use a judge with a larger window"
        )
    return budget


def check_int(key: str, value: Any, low: int) -> None:
    """A whole number >= ``low``, or a one-line ConfigError naming the key."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"{key}={value} must be a whole number >= {low}")


def check_float(key: str, value: Any, low: float, high: float, low_open: bool = False) -> None:
    """A finite number in [low, high] (or (low, high]), or a one-line ConfigError."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value > high or value < low or (low_open and value == low):
        bound = f"({low}, {high}]" if low_open else f"[{low}, {high}]"
        raise ConfigError(f"{key}={value} must be a number in {bound}")


def judge_settings(
    key: str,
    judge: LLM,
    max_attempts: int,
    max_tokens: int,
    temperature: float | None,
    room_tokens: int,
) -> Asker:
    """Validate the parameters every metric of the family has; the judge bound to them.

    ``temperature`` None (the default of every built-in) asks at the judge's own, so
    ``judge.temperature=0.7`` reaches the metric's calls as the run's params record it.
    """
    check_int(f"{key}.max_attempts", max_attempts, 1)
    check_int(f"{key}.max_tokens", max_tokens, 1)
    check_int(f"{key}.room_tokens", room_tokens, 0)
    return Asker(judge, max_attempts, max_tokens, judge_temperature(key, temperature))


def judge_temperature(key: str, temperature: float | None) -> float | None:
    """A metric's own judge temperature, checked; None (the judge's own) as it is."""
    if temperature is None:
        return None
    check_float(f"{key}.temperature", temperature, 0.0, 2.0)
    return float(temperature)


def as_text(value: Any) -> str:
    """A JSON scalar as stripped text ('' for objects, lists and null)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value).strip()
    return ""


def nan_result_values(names: tuple[str, ...], usage: Usage) -> dict[str, float]:
    """NaN for the headline values, with the judge accounting spent so far."""
    return {**dict.fromkeys(names, math.nan), **usage.values()}
