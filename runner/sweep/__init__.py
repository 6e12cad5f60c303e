"""``-m`` sweeps: the Hydra callback that makes one MLflow parent run per sweep, the resuming
sweeper, and the parent's final status.

May import ``runner.config``, ``runner.tracking`` and ``runner.run.preflight``.
"""
