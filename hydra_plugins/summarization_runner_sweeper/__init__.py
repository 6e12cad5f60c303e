"""The runner's Hydra plugins, found by Hydra's plugin discovery in ``hydra_plugins``.

``hydra_plugins`` is a namespace package (it has no ``__init__.py``, so every installed plugin
adds to it).

``resuming_sweeper``: the ``-m`` sweeper that validates every cell, skips those already done in
the sweep, and owns the sweep's MLflow parent run (``hydra/sweeper=resuming``, the default in
conf/config.yaml).
"""
