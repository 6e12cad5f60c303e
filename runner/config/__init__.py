"""Configuration: Hydra's composed config as a validated ``RunConfig``, and its fingerprint.

``run_config`` builds the ``RunConfig`` (its ``data`` block in ``data_config``), ``checks``
checks values, ``fingerprint`` computes a job's identity, ``hydra_errors`` turns Hydra's and
OmegaConf's errors into one line.

May import the plugin API (``runner.api.errors``), other packages' settings as plain data
(``runner.llm.spec``, ``runner.llm.retry``, ``runner.data.hf``), the strategy and metric
registries (``strategies``, ``metrics``: names, modules, prompt folders) and Hydra (in
``hydra_errors`` only); never MLflow, litellm, nor the packages that run or read jobs
(``runner.run``, ``runner.sweep``, ``runner.report``, ``runner.view``).
"""
