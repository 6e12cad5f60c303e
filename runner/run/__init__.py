"""One job's lifecycle, from checked config to a finished MLflow run.

``lifecycle`` runs the job: ``preflight`` checks before anything heavy, ``prepare`` builds
roles, metrics and documents, ``document_loop`` works on documents in parallel (with
``progress``), ``record_setup`` (before the work), ``recording`` (after it) and ``usage``
decide what the run records through ``runner.tracking``, ``console`` prints the summary.

May import the other runner packages (config, data, llm, tracking; sweep for the sweep a job
belongs to; view to log viewer.html; report for metric labels; ``runner.ui`` for the run's
link) and ``metrics`` (the registry, ``Metric``, BooookScore's labels); MLflow and litellm
only through their doors. Imported by the entry point (``runner/__main__.py``), the resuming
sweeper (``hydra_plugins/``: each cell's preflight check) and, as a named exception in
``tests/test_architecture.py``, ``runner.view``.
"""
