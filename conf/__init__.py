"""The shipped Hydra configs, importable as ``runner.conf`` (``pkg://runner.conf``).

pyproject.toml maps this folder to the package ``runner.conf``, so an editable install
and a wheel both find the YAML files here; there is no Python code in ``conf/``.
"""
