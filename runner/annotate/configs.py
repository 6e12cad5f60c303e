"""Label Studio labeling configs: each task kind's own, as its declaration writes it.

The core's ``preference`` and every metric's ``HUMAN_TASKS`` (``runner.api.HumanTask``,
found by ``runner.human.task_kinds``) give their config's XML, whose control names are the
contract with the reader (``runner.human.labelstudio``): the declared ``controls``.
"""

from __future__ import annotations

from runner.human.task_kinds import kinds as kinds
from runner.human.task_kinds import task_kind


def labeling_config(kind: str, metric: str = "") -> str:
    """The Label Studio labeling config (XML) for task kind ``kind``."""
    return task_kind(kind, metric).task.config()
