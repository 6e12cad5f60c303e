"""``python -m runner.view``: the summary viewer page of a run, also logged as viewer.html.

``page`` builds and logs the page (``templates/``), ``data`` and ``trace`` shape what it shows.

May import ``runner.tracking`` (the read side), ``runner.text``, ``runner.config`` (the
store's default) and BooookScore's error labels from ``metrics``; never ``strategies``,
litellm or ``runner.run``, except ``runner.run.usage`` to read a run's usage.json (a named
exception in ``tests/test_architecture.py``).
"""
