"""The one door to MLflow: writing runs, tables and traces (``writer``, ``traces``), reading
them back (``reader``), and the sqlite fast path that reads a store without MLflow
(``sqlite_peek``).

May import the plugin API; never ``runner.run``, ``runner.report`` or ``runner.view``.
"""
