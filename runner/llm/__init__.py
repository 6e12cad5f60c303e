"""Models: the gateway and all around a model call; the only importer of litellm and the SDKs.

The ``Gateway`` (``gateway``, ``embed``: every completion and embedding; ``request``: a
request as plain data; ``completions``: a response or cache entry as a ``Completion``, and
its cost), litellm loaded once (``providers``), the response cache (``cache``), retries
(``retry``), per-endpoint limits (``limits``: requests in flight; ``rate``, ``buckets``,
``rate_ray``: provider rpm/tpm shared by a sweep's jobs), endpoint and key checks (``endpoints``),
provider errors translated to ``runner.api.errors`` (``provider_errors``), the call log
(``call_log``) and budget (``budget``), a model's settings as plain data (``spec``), its
prices read from litellm's price map as data (``prices``, for the estimate), and the
in-process models (``local/``: the embedded llama.cpp model and MiniLM embedder;
``scripted``: a scripted model for tests), and provider batch APIs (``batch/``: a role with
``batch=true`` waits for half-price batches, resumable through a ledger beside the cache).

May import the plugin API (``runner.api.types``, ``runner.api.errors``, ``runner.api.text``),
litellm and (in ``batch/`` only) the ``anthropic`` and ``openai`` SDKs;
never MLflow, Hydra, nor ``runner.run``, ``runner.sweep``, ``runner.report``, ``runner.view``.
"""
