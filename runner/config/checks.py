"""Type and range checks for config values, so a wrong value is one line before anything runs.

Hydra composes strings and numbers as the user typed them; ``temperature=abc`` or
``model.concurrency=abc`` would otherwise reach ``float()`` as a traceback, or be accepted
and logged as a param. The dataclasses' own annotations say what each key must be, and a
field's ``runner.ranges.Range`` (its metadata) which values it takes.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any

from runner.api.errors import ConfigError
from runner.ranges import range_of

SECRET_KEYS = ("api_key", "key", "token", "secret", "password")
"""Keys that would put a secret in config (and so in MLflow and Hydra's outputs)."""


def number(key: str, value: Any, low: float, high: float, example: str) -> float:
    """``value`` as a float within [low, high], or a one-line error naming the key."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError(f"{key}={value} must be a number from {low:g} to {high:g}; try {example}")
    if not low <= value <= high:
        raise ConfigError(f"{key}={value} is outside {low:g}..{high:g}; try {example}")
    return float(value)


def refuse_secret(role: str, key: str) -> None:
    """A key that looks like a secret: refused with the way to give it."""
    if key.lower() in SECRET_KEYS or key.lower().endswith("_key") and key != "api_key_env":
        raise ConfigError(
            f"{role}.{key}: API keys are never taken from config (they would be logged); "
            f"export the key and name its variable with {role}.api_key_env=<VARIABLE>"
        )


def check_fields(cls: type, raw: dict[str, Any], where: str) -> None:
    """Each value of ``raw`` has the type its dataclass field is annotated with."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if (
            field.name in raw
            and raw[field.name] is not None
            and not _fits(raw[field.name], hints[field.name])
        ):
            wanted = _describe(hints[field.name])
            raise ConfigError(f"{where}.{field.name}={raw[field.name]} must be {wanted}")
        values = range_of(field.metadata)
        if values is not None and raw.get(field.name) is not None:
            values.check(f"{where}.{field.name}", raw[field.name])


def _fits(value: Any, hint: Any) -> bool:
    options = (
        typing.get_args(hint)
        if typing.get_origin(hint) in (typing.Union, _union_type())
        else (hint,)
    )
    for option in options:
        if option is type(None):
            continue
        if option is bool and isinstance(value, bool):
            return True
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if option is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return not math.isnan(value)
        if option is str and isinstance(value, str):
            return True
        if dataclasses.is_dataclass(option) and isinstance(value, dict):
            return True
    return False


def _describe(hint: Any) -> str:
    names = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}
    options = [o for o in typing.get_args(hint) or (hint,) if o is not type(None)]
    return " or ".join(names.get(o, getattr(o, "__name__", str(o))) for o in options) + (
        " (or null)" if type(None) in typing.get_args(hint) else ""
    )


def _union_type() -> Any:
    import types

    return types.UnionType
