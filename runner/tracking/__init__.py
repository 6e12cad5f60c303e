"""The one door to MLflow: runs, tables and traces written, and read back as rows.

``writer`` and ``traces`` write, ``reader`` reads, ``sqlite_peek`` looks at a sqlite store
without importing MLflow. Beside them, without MLflow: ``store`` (where a sqlite store lives,
its creation lock, retries while it is locked), ``owners`` (which process owns a run, and
whether it is gone), ``runs_view`` (metric names and the runs table's columns) and
``trace_tree`` (a job's calls as span trees).

May import MLflow, the plugin API (``runner.types``, ``runner.text``) and ``runner.ui``'s tag
names; never ``runner.run``, ``runner.sweep``, ``runner.report`` or ``runner.view``.
"""
