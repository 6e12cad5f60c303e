"""Config groups this plugin adds (``strategy/lead_k.yaml``, ``metrics/compression.yaml``).

A package, so Hydra finds it as ``pkg://example_plugin.conf`` in the installed wheel.
"""
