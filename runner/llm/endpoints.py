"""Checks of a model's endpoint that need no model call.

Its API key is in the environment, its server answers and serves the model. The preflight
(``runner/run/preflight.py``, before MLflow and litellm load) checks both once per job; the
gateway's ``check_ready`` reports a key only litellm can name with the same ``require_key``
line.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from runner.api.errors import AuthError, ModelUnreachableError
from runner.llm.spec import ModelSpec


def setting(role: str, key: str, value: str = "") -> str:
    """Where the user sets ``key`` of ``role``, for a line's fix: ``judge.api_base``.

    With ``value``: ``judge.model=openai/x``. A panel member's role is ``judge:<name>``
    (``judges=[...]``): its own settings are in its alias file (``api_base in
    judge/<name>.yaml``), since ``judge.api_base=...`` would set every member's.
    """
    group, _, member = role.partition(":")
    if member:
        return f"{key}{f': {value}' if value else ''} in {group}/{member}.yaml"
    return f"{role}.{key}{f'={value}' if value else ''}"


def _instead(role: str) -> str:
    """The other way out of a missing key: the embedded model, or a panel without the member."""
    group, _, member = role.partition(":")
    return f"leave {member} out of {group}s=[...]" if member else f"use {role}=local"


def require_key(role: str, spec: ModelSpec, missing: list[str]) -> None:
    """The one message for keys absent from the environment (preflight and gateway)."""
    if missing:
        raise AuthError(
            f"{role}={spec.name} needs {', '.join(missing)} in the environment; "
            f"export it, or {_instead(role)}"
        )


def check_reachable(role: str, spec: ModelSpec, api_base: str) -> None:
    """Any HTTP answer (even 404) means a server is there; only silence is an error."""
    url = api_base.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(url, timeout=min(10.0, spec.timeout_s)) as answer:
            served = _served_models(answer.read())
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise ModelUnreachableError(
            f"{role}={spec.name}: cannot reach {api_base} ({reason}); "
            f"start the server or fix {setting(role, 'api_base')}"
        ) from err
    name = spec.model.split("/", 1)[-1]
    if served and name not in served:
        raise ModelUnreachableError(
            f"{role}={spec.name}: {api_base} does not serve {name!r} "
            f"(it lists {', '.join(sorted(served)[:5])}); "
            f"fix {setting(role, 'model', 'openai/<served name>')}"
        )


def _served_models(body: bytes) -> set[str]:
    """The model ids an OpenAI-compatible ``/models`` answer lists (empty when it lists none)."""
    try:
        rows = json.loads(body or b"{}").get("data") or []
    except (ValueError, AttributeError):
        return set()
    return {str(row.get("id")) for row in rows if isinstance(row, dict) and row.get("id")}
