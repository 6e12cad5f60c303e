"""MkDocs hook: the generated reference pages (filled in by the reference generator)."""
