"""``python -m runner.view``: the summary viewer page of a run, also logged as viewer.html.

``page`` renders and logs the page (``templates/``), ``cli`` is the command line,
``artifacts`` reads the run's files; ``contents`` builds what the page shows, from ``data``
(marked summaries, score columns) and ``trace`` (how each summary was made, with ``steps``
and ``chart``). Starting the command imports neither MLflow nor ``metrics``: both wait
until a run is read.

May import ``runner.tracking`` (the read side, usage.json and the store's default included),
``runner.api.text``, ``runner.config`` and BooookScore's error labels from ``metrics``; never
``strategies``, litellm or ``runner.run``.
"""
