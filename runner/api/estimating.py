"""What a strategy's or metric's optional ``estimate`` hook is given and returns.

``estimate=true`` predicts a job's calls before any call. The core knows no strategy or
metric: it chunks each document with the real tokenizer and asks the plugin's own hook for
the shape of its work, as ``Phase``s (groups of alike calls of one role). What the hook
cannot know exactly (how long an answer is, whether the response cache has a request) it
asks the role's ``Guide``, which answers from the store's measured runs or a named guess
with its bounds, so the estimate can print a range and say which guess drives it.

A hook takes one input object and returns a list of ``Phase``s:

- strategy: ``estimate(inputs: StrategyEstimateInput) -> list[Phase]``, one document's calls:
  its chunks, its roles as ``Guide``s, the model's context ``window``, its ``prompt`` files
  and its ``params``;
- metric: ``estimate(inputs: MetricEstimateInput) -> list[Phase]``, the calls to score one
  summary: the ``summary`` when the data gives it, the ``expected`` summary length, its roles,
  ``prompt``, ``params``, the source ``document`` and what the data says about the summary
  (``extras``, e.g. its given claims).

``params`` are complete: the run's values over the defaults the plugin's ``summarize`` or
``setup`` declares (``runner.api.params``), so a hook repeats none of them.

The older form, ``estimate(chunks, <roles>, *, window, prompt, <params>)`` and
``estimate(summary, expected, <roles>, *, prompt, <params>)`` (with ``extras`` and
``document`` when the hook names them), still works, with one deprecation line in the
estimate naming the new form (``DEPRECATED_FORM``).

Imports nothing of ``runner`` but the plugin API.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from runner.api.params import declared
from runner.api.text import count_tokens
from runner.api.types import Chunk, Document, Message

Prompt = Callable[[str], Path | None]
"""A prompt file by its path within the plugin's prompt folders (``PROMPT_DIRS``), e.g.
``'hier/paper/init.txt'``; None when the plugin has no such file."""


@dataclass(frozen=True)
class Phase:
    """Alike calls of one role within one document."""

    role: str
    purpose: str
    """The calls' purpose as the call log names it ('hier/level0'): their history's key."""
    calls: float
    prompt_tokens: float
    completion_tokens: float
    rounds: float
    """Calls on the critical path (the rest run beside them, up to the endpoint's limit)."""
    bound: str = ""
    """What an upper bound on these calls would be, when the count is an expectation."""


class Guide(Protocol):
    """One role's model as the estimate sees it: measured figures, or guesses with bounds."""

    @property
    def concurrency(self) -> int:
        """Calls in flight at once to this endpoint (``model.concurrency``)."""
        ...

    def fill(self, purpose: str) -> float:
        """Share of its ``max_tokens`` an answer of ``purpose`` uses (measured or guessed)."""
        ...

    def completion(
        self, purpose: str, default: float, what: str, cap: float | None = None
    ) -> float:
        """Mean completion tokens of a call of ``purpose``.

        ``what`` words the guess (empty: ``default`` follows another figure and is no guess
        of its own); ``cap`` is the call's ``max_tokens``.
        """
        ...

    def retries(self, purpose: str) -> float:
        """Further attempts per first attempt of ``purpose`` (0 until measured)."""
        ...

    def measured(self, purpose: str) -> bool:
        """Whether the store has calls of ``purpose`` by this model."""
        ...

    def calls(self, purpose: str) -> int:
        """Calls of ``purpose`` by this model in the store's runs."""
        ...

    def pick(self, what: str, point: float, cheap: float, dear: float, text: str) -> float:
        """A guessed quantity: ``point``, or its ``cheap`` or ``dear`` bound.

        The estimate is made again at each end; ``text`` says what the quantity rests on
        (printed with the range).
        """
        ...

    def cached(
        self, prompt: str | list[Message], max_tokens: int, stop: tuple[str, ...] = ()
    ) -> bool:
        """Whether the response cache answers this request's first attempt (it costs nothing)."""
        ...


def prompt_text(path: Path | None) -> str:
    """A prompt file's text as a plugin fills it (its trailing newline removed); '' for None."""
    return path.read_text(encoding="utf-8").rstrip("\n") if path else ""


@functools.lru_cache(maxsize=4096)
def template_tokens(path: Path | None, *values: object) -> int:
    """Tokens of the prompt file at ``path`` with its ``{}`` slots filled by ``values``.

    Slots beyond ``values`` are left empty; 0 without a file. Cached: an estimate's ranges
    make each cell again at its guesses' bounds, with the same prompts.
    """
    if path is None:
        return 0
    text = prompt_text(path)
    slots = text.count("{}")
    filled = [*values, *([""] * max(0, slots - len(values)))][:slots]
    return count_tokens(text.format(*filled))


@dataclass(frozen=True)
class StrategyEstimateInput:
    """What a strategy's ``estimate`` hook is given for one document."""

    chunks: Sequence[Chunk]
    """The document's chunks, as the job's ``split_into_chunks`` makes them."""
    roles: Mapping[str, Guide]
    """Each of its ``ROLES`` as a ``Guide``, by role name (``inputs.roles["model"]``)."""
    window: int
    """The summarizer's context window in tokens (0 when unknown)."""
    prompt: Prompt
    """Its prompt files by their path within its ``PROMPT_DIRS``."""
    params: Mapping[str, Any]
    """Its parameters as ``summarize`` gets them: the run's values over the defaults
    ``summarize`` declares (filled in by ``run_estimate``)."""


@dataclass(frozen=True)
class MetricEstimateInput:
    """What a metric's ``estimate`` hook is given for one summary."""

    summary: str | None
    """The summary's text when the data gives it; None when a strategy will write it."""
    expected: float
    """The strategy's expected summary length in tokens."""
    roles: Mapping[str, Guide]
    """Each of its ``ROLES`` as a ``Guide``, by role name (``inputs.roles["judge"]``)."""
    prompt: Prompt
    """Its prompt files by their path within its ``PROMPT_DIRS``."""
    params: Mapping[str, Any]
    """Its parameters as ``setup`` gets them: the run's values over the defaults ``setup``
    declares (filled in by ``run_estimate``)."""
    document: Document | None = None
    """The source, for a metric whose prompts carry it; None when the data gives none."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """What the data says about the summary (its given ``claims``)."""


EstimateInput = StrategyEstimateInput | MetricEstimateInput
ENTRY = {StrategyEstimateInput: "summarize", MetricEstimateInput: "setup"}
"""The function whose keyword-only parameters declare a plugin's parameters, by input kind."""
NEW_FORM = {
    StrategyEstimateInput: "estimate(inputs: runner.api.StrategyEstimateInput) -> list[Phase]",
    MetricEstimateInput: "estimate(inputs: runner.api.MetricEstimateInput) -> list[Phase]",
}
DEPRECATED_FORM = (
    "{who}: its estimate hook takes the older keyword form, deprecated since runner.api 0.1; "
    "declare {form} (its params complete, no default repeated; docs: Plugin API)"
)
"""The one line an estimate prints for a hook of the older form."""


def takes_one_input(hook: Callable[..., Any]) -> bool:
    """Whether ``hook`` is ``estimate(inputs)``: exactly one positional parameter.

    Every hook of the older form takes the chunks or the summary and more besides.
    """
    try:
        parameters = list(inspect.signature(hook).parameters.values())
    except (TypeError, ValueError):
        return False
    return len(parameters) == 1 and parameters[0].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )


def run_estimate(module: ModuleType, inputs: EstimateInput) -> list[Phase] | None:
    """``module``'s phases for ``inputs``; None when it declares no ``estimate``.

    The hook gets its parameters completed with the defaults its module's ``summarize`` or
    ``setup`` declares; a hook of the older form is called as it was (``DEPRECATED_FORM``).
    Used by the core for a job's plugins and by a strategy built on another (SummIt's draft).
    """
    hook = getattr(module, "estimate", None)
    if hook is None:
        return None
    if takes_one_input(hook):
        entry = getattr(module, ENTRY[type(inputs)])
        params = {**declared(entry).defaults, **inputs.params}
        phases: list[Phase] = hook(replace(inputs, params=params))
        return phases
    return _older_form(hook, inputs)


def _older_form(hook: Callable[..., Any], inputs: EstimateInput) -> list[Phase]:
    """The hook called with the arguments of the older form (runner.api 0.1 before inputs)."""
    if isinstance(inputs, StrategyEstimateInput):
        return hook(  # type: ignore[no-any-return]
            list(inputs.chunks),
            **inputs.roles,
            window=inputs.window,
            prompt=inputs.prompt,
            **inputs.params,
        )
    params = dict(inputs.params)
    asks = inspect.signature(hook).parameters
    if "extras" in asks:
        params["extras"] = dict(inputs.extras)
    if "document" in asks:
        params["document"] = inputs.document
    return hook(  # type: ignore[no-any-return]
        inputs.summary, inputs.expected, **inputs.roles, prompt=inputs.prompt, **params
    )
