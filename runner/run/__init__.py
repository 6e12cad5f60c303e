"""One job's lifecycle: preflight checks, preparing roles, metrics and documents, the parallel
document loop, progress, recording to MLflow (through ``runner.tracking``) and the console
summary.

May import every other runner package; only the entry points import it.
"""
