"""A kind of Label Studio task people annotate, declared by the metric whose judgments it gives.

A metric module declares ``HUMAN_TASKS = (HumanTask(...), ...)``. ``python -m runner.annotate
export KIND`` then writes that kind's blind tasks, their key and its labeling config, and
``import`` reads the annotated export back through the same declaration, so a researcher's
metric gets a task kind exactly as the built-ins do (BooookScore's span annotation and
Appendix J validation, faithfulness's claims). The core keeps one kind of its own, the
pairwise ``preference`` of two systems, built with this same API.

What the core does for every kind: shuffle the tasks with one seeded ``random.Random``, give
each an opaque ``uid`` and keep what it judges in the key, apart from the annotators; check
every result of an export against the kind's ``controls`` (a control or value key the config
does not name is one line, never skipped); tell kinds apart by their controls (or, for an
annotation with no result, by their ``fields``); attribute each task by its key (or its
summaries' text); refuse one annotator twice on a task. What the kind does: its config, what a
task shows (``tasks``) and what one person's answers mean (``read``: a judgment of the plugin
API, ``Rating``, ``CoherenceAnnotation``, ``ClaimsJudgment`` or ``Validation``).

A plugin-API module: it imports nothing of ``runner`` beyond the other plugin-API modules.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from runner.api.human_format import HumanDataError
from runner.api.types import WorkItem

PER_ITEM = "{{idx}}"
"""Where Label Studio's ``Repeater`` writes an item's index (from 0) in its children's names:
a control declared ``label_{{idx}}`` is ``label_0``, ``label_1``... in an export."""


def item_control(name: str, declared: Iterable[str]) -> tuple[str, int] | None:
    """(declared name, item index) of a repeated control's ``name``, else None.

    ``label_3`` is item 3 of ``label_{{idx}}``.
    """
    for control in declared:
        if PER_ITEM not in control:
            continue
        head, _, tail = control.partition(PER_ITEM)
        found = re.fullmatch(rf"{re.escape(head)}(\d+){re.escape(tail)}", name)
        if found:
            return control, int(found.group(1))
    return None


@dataclass(frozen=True)
class Control:
    """What one control of a labeling config writes in a result's ``value``."""

    tag: str
    """The config's XML element (``Choices``, ``Labels``, ``TextArea``)."""
    needs: tuple[str, ...]
    """Value keys every result of the control has."""
    may: tuple[str, ...] = ()
    """Further value keys Label Studio writes for it (a region's offsets and text)."""

    def describe(self, name: str) -> str:
        """The control as an error names what the config expects: ``name (Tag: value keys)``."""
        keys = "/".join((*self.needs, *self.may))
        return f"{name} ({self.tag}: value {keys})"


CHOICES = Control("Choices", ("choices",))
TEXTAREA = Control("TextArea", ("text",))
REGION_TEXTAREA = Control("TextArea", ("text",), ("start", "end"))
"""A TextArea answered per region (``perRegion="true"``)."""
LABELS = Control("Labels", ("labels",), ("start", "end", "text"))


@dataclass(frozen=True)
class TaskSystem:
    """One system whose summaries a task kind may show: a run of the store, or a named file."""

    name: str
    """The run id, or the name given with ``--system NAME=FILE``."""
    summaries: Mapping[str, str]
    """doc_id -> the summary."""
    is_run: bool = False
    artifact: Callable[[str], Any] = lambda name: None
    """A run's artifact parsed (JSON, or YAML for ``.yaml``), or None when it has none."""
    items: Callable[[], tuple[list[WorkItem], str]] = lambda: ([], "not a run")
    """The run's documents read again through the data loader its config names, and '' (or,
    when they cannot be read here, no items and why not, in a few words)."""


@dataclass(frozen=True)
class TaskInput:
    """What ``export`` gives a kind's ``tasks``: the systems, inputs of its own, a seeded rng."""

    systems: tuple[TaskSystem, ...]
    files: tuple[tuple[str, Path], ...] = ()
    """``--annotations SOURCE=FILE``, as (source, path): inputs a kind takes beside the runs
    (BooookScore's validation: annotations to validate)."""
    rng: random.Random = field(default_factory=random.Random)
    """The export's seeded generator, for what a kind draws (the sides of a pair); the core
    draws the tasks' order and uids from it too."""


@dataclass(frozen=True)
class TaskItem:
    """One task: what it shows, and what it judges (which only the key says)."""

    doc_id: str
    data: Mapping[str, Any]
    """The task's data fields (the core adds ``uid`` and ``book``)."""
    judged: Mapping[str, Any]
    """The key's entry: ``{"system": name}``, ``{"systems": [a, b]}`` (in the order shown) or
    ``{"source": name}``, and anything else the reader needs back."""


@dataclass(frozen=True)
class TaskAnswer:
    """One person's completed annotation of one task, with its attribution."""

    kind: str
    """The task's kind (``HumanTask.kind``)."""
    data: Mapping[str, Any]
    """The task's data fields, as exported."""
    results: Sequence[Mapping[str, Any]]
    """Label Studio's results, each checked against the kind's controls."""
    doc_id: str
    systems: tuple[str, ...]
    """The system(s) judged (the key's, or found by the summaries' text), in the order shown."""
    annotator: str
    metric: str
    """The metric declaring the kind ('' for a built-in one): what a judgment's ``metric``
    names."""
    error: Callable[[str, str, str], HumanDataError]
    """(field, problem, fix) -> the one-line error naming the file and the task."""

    def controls(self) -> dict[str, Mapping[str, Any]]:
        """from_name -> value of the whole-task controls (choices, text areas)."""
        return {
            str(item.get("from_name")): item.get("value") or {}
            for item in self.results
            if item.get("type") != "relation"
        }

    def choice(self, name: str, allowed: Sequence[str], required: bool = True) -> str | None:
        """The one choice made in control ``name``, checked against ``allowed``."""
        controls = self.controls()
        if name not in controls:
            if required:
                raise self.error(name, "no choice made", f"answer {name!r} in Label Studio")
            return None
        chosen = controls[name].get("choices") or []
        if len(chosen) != 1 or chosen[0] not in allowed:
            raise self.error(name, f"unknown choice {chosen!r}", f"pick one of {list(allowed)}")
        return str(chosen[0])

    def text(self, name: str) -> str:
        """The text of text area ``name`` ('' when left empty)."""
        return area_text(self.controls().get(name) or {})

    def field(self, name: str) -> str:
        """The task's data field ``name``, which must be a string."""
        value = self.data.get(name)
        if not isinstance(value, str):
            raise self.error(name, f"is {type(value).__name__}, not a string", "fix the file")
        return value


def area_text(value: Mapping[str, Any]) -> str:
    """A text area's text (Label Studio gives a list of lines)."""
    text = value.get("text") or []
    return str(text) if isinstance(text, str) else "\n".join(str(t) for t in text)


@dataclass(frozen=True)
class HumanTask:
    """What a metric declares in ``HUMAN_TASKS``: one kind of Label Studio task."""

    kind: str
    """Its name on the command line and in the key (``export KIND``); unique across metrics."""
    help: str
    """What people do in it, in a few words (``export --help`` lists it)."""
    config: Callable[[], str]
    """The Label Studio labeling config (XML), written beside the tasks."""
    controls: Mapping[str, Control]
    """Every control of the config by name (``PER_ITEM`` in a repeated one's): the contract an
    export's results are checked against."""
    fields: tuple[str, ...]
    """The data fields every task of the kind has: an annotation with no result (nothing
    marked) is told apart by them, the kind with the most fields present winning."""
    tasks: Callable[[TaskInput], tuple[list[TaskItem], list[str]]]
    """The tasks of the runs given, and one note per document left out (why, in a line);
    raises ``HumanDataError`` when there is nothing to annotate."""
    read: Callable[[TaskAnswer], Any]
    """One person's answers as a judgment of the plugin API; raises ``answer.error(...)``."""
    text_fields: tuple[str, ...] = ("summary",)
    """Data fields holding the judged systems' summaries, in order: with no key, a task is
    attributed by matching their text (``()``: only ``unkeyed`` can attribute one)."""
    unkeyed: Callable[[Mapping[str, Any]], tuple[str, tuple[str, ...]] | str] | None = None
    """With no key and no ``text_fields``: (doc_id, systems) from the task's data, or why not."""
    inputs: str = ""
    """What ``--annotations SOURCE=FILE`` gives this kind ('' when it takes none)."""


def headers(title: str, lines: Sequence[str]) -> list[str]:
    """A config's title and instruction paragraphs, as Label Studio ``Header`` lines."""
    out = [f"  <Header value={quoteattr(title)}/>"]
    out += [f'  <Header size="6" value={quoteattr(line)}/>' for line in lines]
    return out


def choices(name: str, to: str, values: Sequence[str], question: str) -> list[str]:
    """A required single choice with its question, and a ``<name>_comments`` text area."""
    out = [f'  <Header size="5" value={quoteattr(question)}/>']
    out.append(f'  <Choices name="{name}" toName="{to}" choice="single" required="true">')
    out += [f"    <Choice value={quoteattr(v)}/>" for v in values]
    out.append("  </Choices>")
    out.append(f'  <TextArea name="{name}_comments" toName="{to}" rows="2" editable="true"/>')
    return out
