"""``-m`` sweeps: one MLflow parent run per sweep, its jobs as children, resumed cell by cell.

``SweepCallback`` (a Hydra callback) creates or finds the parent and tells the jobs about it;
the resuming sweeper launches only the cells without a FINISHED run; ``status`` ends the
parent with a summary of its children's statuses.

May import Hydra, ``runner.config``, ``runner.tracking``, ``runner.run`` (each cell's
preflight check) and the prompt folders of ``strategies`` and ``metrics`` (the sweep's
identity). Imported by the entry point and by ``runner.run`` (the sweep a job belongs to).
"""
