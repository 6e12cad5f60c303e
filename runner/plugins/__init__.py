"""Strategies, metrics and data loaders found by name: built-in, installed, or the user's own.

Every one comes through the same door (``registry.find``): an entry point of an installed
distribution (the built-ins are entry points of this package, declared in pyproject.toml),
a dotted import path given in YAML, or a ``<name>.py`` file in the folder the user runs
from. ``contract`` checks what a module must declare, ``identity`` what of it enters a run's
fingerprint. Nothing here imports a plugin until a job asks for it by name, so ``--help``
and the report never load strategies or metrics. May import the plugin API and the stdlib.
"""
