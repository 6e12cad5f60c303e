"""The meta-evaluation: does a metric agree with people? (judge vs people, metric vs human score).

``read``: the human runs and what they judged; ``tables`` and ``pairs``: the tables as values;
``faithfulness``: a faithfulness rater's labels against people's (summaries, claims, summarizers);
``stats``: the statistics and their bootstrap intervals; ``format``: Markdown, LaTeX and CSV;
``plots``: the figure; ``make``: what ``python -m runner.report`` calls.
"""
