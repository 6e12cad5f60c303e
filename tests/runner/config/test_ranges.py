"""Every numeric setting of a model or judge is checked against its range before anything runs
(issue 39): the table is generated from the schema (``ModelSpec``'s and ``RetryPolicy``'s
fields) and every file of ``conf/model/`` and ``conf/judge/``, so a new numeric key without a
declared ``runner.ranges.Range`` fails here instead of reaching a provider.

The command-level cases (no run, no store, no model call) are in ``tests/test_bad_input.py``.
"""

from __future__ import annotations

import typing
from dataclasses import fields
from typing import Any

import pytest

from runner.api.errors import ConfigError
from runner.config.run_config import build_run_config, model_spec
from runner.llm.retry import RetryPolicy
from runner.llm.spec import ModelSpec
from runner.ranges import Range, range_of
from tests.runner.config.test_config import composed, options


def numeric_fields(cls: type) -> dict[str, Any]:
    """The fields of ``cls`` holding a number (int or float, optional or not; not bool)."""
    hints = typing.get_type_hints(cls)
    found = {}
    for field in fields(cls):
        kinds = set(typing.get_args(hints[field.name]) or (hints[field.name],)) - {type(None)}
        if kinds and kinds <= {int, float}:
            found[field.name] = field
    return found


SCHEMA = {
    **{name: f for name, f in numeric_fields(ModelSpec).items()},
    **{f"retry.{name}": f for name, f in numeric_fields(RetryPolicy).items()},
}
FILES = [("model", alias) for alias in options("model")] + [
    ("judge", alias) for alias in options("judge")
]


def test_the_schema_has_the_numeric_keys_the_files_hold() -> None:
    """The table below covers what users set: every numeric value in a file is a schema key."""
    in_files = set()
    for role, alias in FILES:
        block = role_block(role, alias)
        in_files |= {k for k, v in flat(block).items() if is_number(v)}
    assert in_files and in_files <= set(SCHEMA), sorted(in_files - set(SCHEMA))
    assert {"temperature", "top_p", "max_tokens", "concurrency", "timeout_s", "n_ctx"} <= in_files


@pytest.mark.parametrize("key", sorted(SCHEMA))
def test_every_numeric_setting_declares_its_range(key: str) -> None:
    assert range_of(SCHEMA[key].metadata) is not None, (
        f"{key} holds a number but declares no range: add metadata=valid(Range(...)) "
        "to its field (runner/llm/spec.py or runner/llm/retry.py)"
    )


def out_of_range(values: Range) -> list[float]:
    """Values just outside ``values``: below its low bound (or on it, when it is excluded)
    and above its high bound."""
    found: list[float] = []
    if values.low is not None:
        found.append(values.low if values.above else values.low - 1)
    if values.high is not None:
        found.append(values.high + 0.5)
    return found


@pytest.mark.parametrize(("role", "alias"), FILES, ids=[f"{r}={a}" for r, a in FILES])
def test_a_value_out_of_range_is_one_line_naming_the_key_value_and_range(
    role: str, alias: str
) -> None:
    block = role_block(role, alias)
    checked = 0
    for key, field in SCHEMA.items():
        values = range_of(field.metadata)
        assert values is not None
        for bad in out_of_range(values):
            with pytest.raises(ConfigError) as refused:
                model_spec(with_value(block, key, bad), role)
            line = str(refused.value)
            assert "\n" not in line and line.startswith(f"{role}.{key}={bad} is out of range: ")
            assert values.describe() in line, line
            checked += 1
        if values.low is not None:  # the bound itself, when it is in, is accepted
            edge = values.low + 1 if values.above else values.low
            model_spec(with_value(block, key, edge), role)
    assert checked >= len(SCHEMA)


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            ("model=claude", "model.temperature=1.5"),
            "model.temperature=1.5 is out of range: from 0 to 1 for Anthropic's models "
            "(anthropic/claude-sonnet-4-5-20250929); e.g. model.temperature=1",
        ),
        (
            ("metrics=paper", "judge=claude", "judge.temperature=1.2"),
            "judge.temperature=1.2 is out of range: from 0 to 1 for Anthropic's models "
            "(anthropic/claude-sonnet-4-5-20250929); e.g. judge.temperature=1",
        ),
        (
            ("model=claude", "temperature=1.5"),
            "temperature=1.5 is out of range: from 0 to 1 for Anthropic's models "
            "(anthropic/claude-sonnet-4-5-20250929); e.g. temperature=1",
        ),
        (
            ("model=gpt4", "model.temperature=2.5"),
            "model.temperature=2.5 is out of range: from 0 to 2; e.g. model.temperature=0.5",
        ),
    ],
)
def test_a_providers_narrower_range_is_named(overrides: tuple[str, ...], line: str) -> None:
    with pytest.raises(ConfigError) as refused:
        build_run_config(composed(*overrides))
    assert str(refused.value) == line


def test_in_range_values_of_every_provider_are_accepted() -> None:
    config = build_run_config(composed("model=claude", "model.temperature=1", "temperature=0.9"))
    assert config.roles["model"].temperature == 1 and config.temperature == 0.9
    config = build_run_config(composed("model=gpt4", "model.temperature=2", "model.top_p=0"))
    assert config.roles["model"].temperature == 2 and config.roles["model"].top_p == 0


def role_block(role: str, alias: str) -> dict[str, Any]:
    """The role's composed block for ``alias`` (a judge needs a metric that judges)."""
    extra = ("metrics=paper",) if role == "judge" else ()
    block = composed(f"{role}={alias}", *extra)[role]
    assert isinstance(block, dict)
    return block


def with_value(block: dict[str, Any], key: str, value: float) -> dict[str, Any]:
    """A copy of ``block`` with ``key`` (``retry.x`` for the retry policy) set to ``value``;
    an integer field gets an integer, so the type check passes and the range is what fails."""
    field = SCHEMA[key]
    hint = typing.get_type_hints(RetryPolicy if key.startswith("retry.") else ModelSpec)
    kinds = set(typing.get_args(hint[field.name]) or (hint[field.name],))
    number: float = int(value) if float not in kinds else value
    copy = dict(block)
    if key.startswith("retry."):
        copy["retry"] = {**(copy.get("retry") or {}), field.name: number}
    else:
        copy[key] = number
    return copy


def flat(block: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in block.items() if k != "retry"}
    out.update({f"retry.{k}": v for k, v in (block.get("retry") or {}).items()})
    return out


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
