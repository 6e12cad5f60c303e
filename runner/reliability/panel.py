"""How a panel member's values are named beside the panel's (``judges=[a,b]``).

A panel run holds, for each judged value, the panel's pooled ``<metric>/<value>`` under the
metric's usual name and each member's as ``<metric>:<judge>/<value>``, per document
(``scores.json``) and for the run. The job writes them, and the report reads them apart (a
member's row beside the panel's); both use these two functions.
"""

from __future__ import annotations


def member_label(label: str, judge: str) -> str:
    """The label a member's values go under: ``<metric>:<judge>``."""
    return f"{label}:{judge}"


def panel_member(key: str) -> tuple[str, str] | None:
    """(the pooled ``<metric>/<value>``, the judge) of a member's key; None for any other key."""
    label, slash, value = key.partition("/")
    metric, colon, judge = label.partition(":")
    if not (slash and colon and metric and judge) or ":" in judge:
        return None
    return f"{metric}/{value}", judge
