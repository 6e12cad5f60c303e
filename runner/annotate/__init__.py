"""``python -m runner.annotate``: summaries out to Label Studio, people's judgments back in.

Tasks are blind (origin hidden, order shuffled with a recorded seed, the key kept apart), and
a bad export is one line naming the file, the task and the field.
"""
