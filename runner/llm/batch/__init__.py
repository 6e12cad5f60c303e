"""Provider batch APIs for a role with ``batch=true``: half price, answers within hours.

A job's batchable requests wait in ``collector.py`` until no new one arrives for a moment,
go to the provider as one batch (``anthropic.py``: Message Batches through Anthropic's SDK;
``openai.py``: files + batches through OpenAI's SDK, which OpenAI-compatible servers such as
vLLM also speak), and each answer lands in the response cache under its request's own key,
so the job goes on as if it had been answered online. ``ledger.py`` writes every submitted
batch beside the cache before the job waits, so a rerun after a kill waits for the same
batch instead of paying again. ``protocol.py`` is what a provider's adapter implements.

Part of ``runner.llm``, the one door to model providers: only this package imports the
providers' SDKs.

What the rest of the runner uses is imported from this package, never from its modules: the
gateway's collector and endpoints, the ledger and its entries, a provider's adapter and which
providers have a batch API (``tests/test_architecture.py`` holds it).
"""

from runner.llm.batch.collector import BATCH_FANOUT, BatchCollector
from runner.llm.batch.endpoints import Batches
from runner.llm.batch.ledger import BatchEntry, Ledger
from runner.llm.batch.protocol import BatchProvider
from runner.llm.batch.providers import batch_api, provider_for, unsupported

__all__ = [
    "BATCH_FANOUT",
    "BatchCollector",
    "BatchEntry",
    "BatchProvider",
    "Batches",
    "Ledger",
    "batch_api",
    "provider_for",
    "unsupported",
]
