"""The one door to MLflow: runs, tables and traces written, and read back as rows.

``writer`` and ``traces`` write, ``reader`` reads, ``sqlite_peek`` looks at a sqlite store
without importing MLflow. Beside them, without MLflow: ``store`` (the default store, where a
sqlite store lives, its creation lock, retries while it is locked, and the stores a command
must not use: a tracking server that does not answer, sqlite on a network filesystem),
``owners`` (which process owns a run, and whether it is gone), ``runs_view`` (metric names,
the runs table's columns and the experiment tags the UI reads), ``usage`` (a run's usage.json
read back) and ``trace_tree`` (a job's calls as span trees).

May import MLflow and the plugin API (``runner.api.types``, ``runner.api.text``); never
``runner.run``, ``runner.sweep``, ``runner.report``, ``runner.view`` or ``runner.ui``.
"""
