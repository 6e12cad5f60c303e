"""Puts the example plugin's config groups on Hydra's search path.

Hydra imports every module under the ``hydra_plugins`` namespace package and uses the
``SearchPathPlugin`` subclasses it finds (https://hydra.cc/docs/advanced/plugins/), so once
the package is installed ``strategy=lead_k`` and ``metrics=compression`` compose from
``example_plugin/conf/`` with no ``--config-dir``.
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class ExamplePluginSearchPath(SearchPathPlugin):
    """Appends ``pkg://example_plugin.conf`` (after the runner's own config)."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        """Add this package's conf folder."""
        search_path.append(
            provider="summarization-runner-example-plugin", path="pkg://example_plugin.conf"
        )
