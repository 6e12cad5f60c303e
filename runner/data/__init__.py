"""Input documents, each source checked with a one-line error naming the file.

``loaders``: the bundled sample (``runner/sample_data/``), a folder of .txt files with
optional references, the BooookScore pickle, summaries made elsewhere (``data=summaries``);
``hf``: Hugging Face datasets.

May import the plugin API only (``runner.api.types``, ``runner.api.errors``); never the
packages that run or read jobs (``runner.run``, ``runner.sweep``, ``runner.report``,
``runner.view``).
"""
