"""A study folder's loose-module data loader of three fixed documents.

For tests that make runs from a loader and a strategy of their own (no model) and read them back.
"""

DOCS = {
    "a": "Rain fell on the old harbour town while the ferry waited at the pier for its pilot.",
    "b": "The keeper counted ships in a ledger that nobody else had read for forty years now.",
    "c": "A night train crossed the border with one passenger and a crate of copper wire.",
}
LOADER = '''
"""Three fixed documents."""
from runner.api import Document

KEYS = ("path",)
DOCS = {docs!r}


def load(*, path=None):
    return [Document(doc_id, text) for doc_id, text in DOCS.items()]
'''
