"""``python -m runner.report``: the paper's tables with bootstrap CIs and plots of a sweep.

``make`` is the Hydra entry; ``config`` the settings, ``read`` reads the runs back, ``runs``
selects those to average, ``layout`` their rows and columns, ``table`` the estimates,
``format`` Markdown/LaTeX/CSV, ``plots`` the figures.

May import ``runner.tracking`` (reads runs, logs the report to the sweep's parent),
``runner.config`` (error lines, the store's default, which params are not the experiment),
``runner.llm.spec`` (settings as data), ``runner.api.errors``, Hydra, and BooookScore's error
labels from ``metrics``; never ``strategies``, litellm or ``runner.run``.
"""
