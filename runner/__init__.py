"""The experiment runner.

No network at import or start-up, however the package is entered (``python -m runner``,
the ``summarization-runner`` script, or ``import runner.llm.local.model`` in a notebook):
litellm reads its bundled price map instead of fetching one, and MLflow's usage telemetry
is off. Each is a default: a user who sets the variable keeps their value.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# NumPy's OpenBLAS (the embedded MiniLM embedder) thrashes with one thread per core when the
# runner's own threads keep the cores busy: several times slower than one thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
