"""Input documents: loaders for the sample, a folder, the BooookScore pickle, stored summaries
and Hugging Face datasets, each checked with a one-line error naming the file.

May import the plugin API only.
"""
