"""Credentials out of everything the runner writes or prints: ``redacted``.

A user and password in a URI (``tracking.uri=http://alice:pw@host``,
``postgresql://user:pw@db/mlflow``, ``model.api_base=https://user:key@proxy``) and a
token-like query parameter (``?token=...``) are dropped from text before it reaches
MLflow (params, tags, the run's name and note, text artifacts such as ``config.yaml``) or
the console; the connection itself keeps them. Nothing here imports MLflow.
"""

from __future__ import annotations

import re
from typing import Any

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@'\"]+@")
"""``scheme://user[:password]@``: the user info of any URI in a text."""
_TOKEN = re.compile(
    r"(?P<name>[?&;](?:access_token|api[_-]?key|apikey|key|password|passwd|pwd|secret|"
    r"sig|signature|token|auth)=)[^&\s'\"#]+",
    re.IGNORECASE,
)
"""A query parameter whose name says it is a credential."""
HIDDEN = "***"


def redacted(text: str) -> str:
    """``text`` with every URI's user and password removed and credential parameters hidden."""
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(r"\g<scheme>", text)
    return _TOKEN.sub(rf"\g<name>{HIDDEN}", text)


def redacted_data(data: Any) -> Any:
    """Every string in a JSON- or YAML-shaped value (dicts, lists) redacted, keys included."""
    if isinstance(data, str):
        return redacted(data)
    if isinstance(data, dict):
        return {redacted_data(k): redacted_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redacted_data(v) for v in data]
    return data
