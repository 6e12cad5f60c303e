"""Human judgments: read, validated, attributed to runs, scored, and compared with metrics.

Holds the judgment values (``judgments.py``) and the readers of the formats people use
(the BooookScore authors' annotation files, Label Studio exports, a plain CSV/JSONL table).
May import the plugin API, ``runner.tracking`` (to find the runs a judgment belongs to) and
BooookScore's sentence rules from ``metrics``; it calls no model.
"""
