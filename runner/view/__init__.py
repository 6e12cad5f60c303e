"""``python -m runner.view``: the summary viewer page of a run.

May import ``runner.tracking`` (the read side) and the plugin API; never strategies' or
metrics' code beyond their label lists, nor litellm.
"""
