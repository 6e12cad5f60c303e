"""``-m`` sweeps: one MLflow parent run per sweep, its jobs as children, resumed cell by cell.

``parent`` is the sweep's parent run (found, opened, finished, and told to the jobs through
environment variables), ``outcome`` what a job hands back to the sweeper, ``status`` the
parent's final status (a summary of its children's), ``callback`` the Hydra side: the
sweep's identity, run names, and ``SweepCallback``, which opens the parent for a sweeper
other than the resuming one. The resuming sweeper itself is a Hydra plugin built on this
package (``hydra_plugins/summarization_runner_sweeper/``).

May import Hydra, ``runner.config``, ``runner.tracking`` and the prompt folders of
``strategies`` and ``metrics`` (the sweep's identity); never ``runner.run``, ``runner.report``
or ``runner.view``. Imported by the entry point, the resuming sweeper and ``runner.run``
(the sweep a job belongs to).
"""
