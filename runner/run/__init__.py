"""One job's lifecycle, from checked config to a finished MLflow run.

``lifecycle`` runs the job: ``preflight`` checks before anything heavy (and reads the
documents), ``prepare`` builds roles and metrics on what it found, ``document_loop`` works on
documents in parallel (with ``progress``) and calls the strategy and metrics through
``plugin_calls`` (what they return checked; a breach or an exception of theirs is one line
naming the plugin, ``plugin_errors``), ``record_setup`` (before the work), ``recording``
(after it) and ``usage`` decide what the run records through ``runner.tracking``, ``console``
prints the summary.

May import the other runner packages (config, data, llm, tracking; sweep for the sweep a job
belongs to; view to log viewer.html; report for metric labels; ``runner.ui`` for the run's
link), ``runner.plugins`` (the strategy, metrics and data loader the config names) and
``metrics`` (``Metric``, BooookScore's labels); MLflow and litellm only through their
doors. Imported by the entry point (``runner/__main__.py``) and the resuming sweeper
(``hydra_plugins/``: each cell's preflight check).
"""
