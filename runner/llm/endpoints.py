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


def require_key(role: str, spec: ModelSpec, missing: list[str]) -> None:
    """The one message for keys absent from the environment (preflight and gateway)."""
    if missing:
        raise AuthError(
            f"{role}={spec.name} needs {', '.join(missing)} in the environment; "
            f"export it, or use {role}=local"
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
            f"start the server or fix {role}.api_base"
        ) from err
    name = spec.model.split("/", 1)[-1]
    if served and name not in served:
        raise ModelUnreachableError(
            f"{role}={spec.name}: {api_base} does not serve {name!r} "
            f"(it lists {', '.join(sorted(served)[:5])}); fix {role}.model=openai/<served name>"
        )


def _served_models(body: bytes) -> set[str]:
    """The model ids an OpenAI-compatible ``/models`` answer lists (empty when it lists none)."""
    try:
        rows = json.loads(body or b"{}").get("data") or []
    except (ValueError, AttributeError):
        return set()
    return {str(row.get("id")) for row in rows if isinstance(row, dict) and row.get("id")}
