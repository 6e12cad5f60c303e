"""The config reference: every key a user can set, read from what the runner validates with.

``tables.py`` builds it (``build``), ``sources.py`` reads YAML comments, attribute docstrings and
type hints, ``markdown.py`` writes the docs page (``docs/hooks/reference.py`` calls both on every
``mkdocs build``).
"""

from runner.config.reference.markdown import markdown
from runner.config.reference.sources import yaml_comments
from runner.config.reference.tables import Key, Reference, ReferenceError, Table, build

__all__ = ["Key", "Reference", "ReferenceError", "Table", "build", "markdown", "yaml_comments"]
