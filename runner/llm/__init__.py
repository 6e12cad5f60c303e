"""Models: the ``Gateway`` (the only caller of litellm), its cache, retries, limits, endpoint
checks, call log and budget, embeddings, and the providers litellm is given (``local/``: the
embedded llama.cpp model and MiniLM embedder; ``scripted``: a scripted model for tests).

May import the plugin API; never MLflow, Hydra or ``runner.run``.
"""
