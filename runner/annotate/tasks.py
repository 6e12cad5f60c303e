"""Blind Label Studio tasks and the key that maps them back, for any task kind.

A task shows only an opaque ``uid``, the book (doc_id) and what its kind shows
(``runner.api.HumanTask.tasks``); which run or system wrote a summary (or an annotation) is
only in the key, written to a separate file. One ``random.Random(seed)`` draws what the kind
draws (the sides of a pair), then the task order and the uids, so the same inputs and seed
give the same files.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from runner.api.human_task import TaskInput
from runner.human.task_kinds import Declared


@dataclass(frozen=True)
class Export:
    """What ``export`` writes: the tasks, the key, and notes on what was left out."""

    tasks: list[dict[str, Any]]
    key: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _uid(rng: random.Random) -> str:
    return f"t{rng.getrandbits(64):016x}"


def build(kind: Declared, inputs: TaskInput, seed: int) -> Export:
    """The kind's tasks in a seeded order, each with a fresh uid, and the key to them.

    The key names the metric declaring the kind when it is not built in, so ``import`` finds
    the kind again without being told where.
    """
    found, notes = kind.task.tasks(inputs)
    items = list(found)
    rng = inputs.rng
    rng.shuffle(items)
    tasks, key = [], {}
    for item in items:
        uid = _uid(rng)
        tasks.append({"data": {"uid": uid, "book": item.doc_id, **item.data}})
        key[uid] = {"doc_id": item.doc_id, **item.judged}
    head: dict[str, Any] = {"kind": kind.task.kind, "seed": seed}
    if kind.owner:
        head["metric"] = kind.metric
    return Export(tasks, {**head, "tasks": key}, list(notes))
