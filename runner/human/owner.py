"""The metric that owns a span annotation's format, found through the plugin registry.

A metric module declares its human-judgment format as ``HUMAN`` (``runner.api.HumanFormat``).
The core names no metric: an annotation names its owner (``CoherenceAnnotation.metric``), and
an annotation that names none (the authors' files, judgments stored before the hook, a
Label Studio export of the built-in span task) belongs to the one built-in metric that
declares the format. A module is imported only when a judgment needs it.
"""

from __future__ import annotations

from functools import cache

from runner.api.human_format import CoherenceAnnotation, HumanDataError, HumanFormat
from runner.plugins.errors import PluginError
from runner.plugins.registry import available, find, load


@cache
def built_in_owner() -> str:
    """The name of the one built-in metric declaring ``HUMAN`` (annotations naming none)."""
    owners = [
        name
        for name, plugin in sorted(available("metrics").items())
        if plugin.built_in and isinstance(getattr(load(plugin), "HUMAN", None), HumanFormat)
    ]
    if len(owners) != 1:
        raise HumanDataError(
            f"{len(owners)} built-in metrics declare a human-judgment format ({owners}); "
            "name the metric that owns the annotations"
        )
    return owners[0]


def owner(metric: str) -> tuple[str, HumanFormat]:
    """(name, format) of the metric ``metric`` ('' for the built-in owner)."""
    name = metric or built_in_owner()
    try:
        module = load(find("metrics", name))
    except PluginError as err:
        raise HumanDataError(f"the annotations' metric {err}") from err
    human = getattr(module, "HUMAN", None)
    if not isinstance(human, HumanFormat):
        raise HumanDataError(
            f"metrics={name} declares no human-judgment format (HUMAN = runner.api.HumanFormat"
            "(...)); annotate with a metric that has one"
        )
    return name, human


def owner_of(annotation: CoherenceAnnotation) -> tuple[str, HumanFormat]:
    """(name, format) of the metric that owns ``annotation``."""
    return owner(annotation.metric)
