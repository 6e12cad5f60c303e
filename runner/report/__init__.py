"""``python -m runner.report``: the paper's tables with bootstrap CIs and plots from a sweep's
runs.

May import ``runner.tracking`` (the read side), ``runner.config`` (settings and errors);
never strategies, metrics or litellm.
"""
