"""The embedded models, run in this process.

``model``: llama.cpp's Qwen2.5-Coder-0.5B as summarizer or judge, a litellm custom provider
registered by ``runner.llm.providers``, with its repeat and copy stops (``stops``), clocks
(``perf``) and weights file (``weights``); ``embedder``: the NumPy MiniLM embedder, called by
the gateway without litellm.

Part of ``runner.llm`` and under its rules: the plugin API and litellm, nothing of the job.
"""
