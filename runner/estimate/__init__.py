"""``estimate=true``: a job's or sweep's model calls, tokens, cost and wall time, before any call.

Predicted from the chunking (the real tokenizer), the strategies' shapes, the roles' prices
and the store's history of each endpoint's latency and tokens per call.
"""
