"""litellm, imported once and configured, and the ids of gateway calls.

Shared by the gateway's two halves (``runner/llm/gateway.py`` for completions and
``runner/llm/embed.py`` for embeddings), the only modules that call litellm.
"""

from __future__ import annotations

import functools
import itertools
import logging
import uuid
from typing import Any


@functools.cache
def load_litellm() -> Any:
    """litellm, imported and configured once, with the in-process providers registered."""
    import litellm

    from runner.llm import scripted as fake_llm
    from runner.llm.local import model as local_model

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)  # one INFO line per call otherwise
    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map if p.get("provider") not in ("local", "scripted")],
        {"provider": "local", "custom_handler": local_model.PROVIDER},
        {"provider": "scripted", "custom_handler": fake_llm.PROVIDER},
    ]
    return litellm


_CALL_PREFIX = uuid.uuid4().hex[:12]  # one random draw per process, cheaper than a uuid4 per call
_CALL_COUNTER = itertools.count(1)


def new_call_id() -> str:
    """Unique call id: a per-process random prefix and a counter."""
    return f"{_CALL_PREFIX}-{next(_CALL_COUNTER):06d}"
