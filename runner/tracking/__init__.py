"""The one door to MLflow: runs, tables and traces written, and read back as rows.

``writer`` and ``traces`` write, ``reader`` reads, ``sqlite_peek`` looks at a sqlite store
without importing MLflow.

May import MLflow, the plugin API (``runner.types``, ``runner.text``) and ``runner.ui``'s tag
names; never ``runner.run``, ``runner.sweep``, ``runner.report`` or ``runner.view``.
"""
