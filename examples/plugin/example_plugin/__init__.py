"""An example plugin of summarization-runner: strategy ``lead_k`` and metric ``compression``."""
