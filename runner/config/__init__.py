"""Configuration: Hydra's composed config turned into a validated ``RunConfig``, value checks,
the run's fingerprint, and Hydra's errors as one line.

May import the plugin API (``runner.types``, ``runner.errors``), ``runner.llm.spec`` and
``runner.llm.retry`` (model settings as data), ``runner.data.hf`` (its settings), and the
strategy and metric registries; never MLflow or litellm.
"""
