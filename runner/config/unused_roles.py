"""Settings a job's command line gives to a model role that nothing in the job uses.

A role nothing asks is never built, so its checks would never run and its override would be
dropped in silence (``judge.samples=3`` with only ``metrics=stats``; ``model.max_tokens=0``
with ``strategy=none``). Here each such override is still checked against its range, and
named in one line: a single job is refused with it, a sweep's cell says it in a note.
"""

from __future__ import annotations

from typing import Any

from runner.config.checks import check_fields
from runner.config.panel import JUDGE, override_key
from runner.llm.spec import ModelSpec
from runner.plugins.contract import MODEL_ROLES
from runner.plugins.registry import available, load

ASKED_BY_PLUGINS = ("judge", "evaluator", "embedder")
"""Roles only a strategy or metric asks (``model`` is the others' default: ``judge=same``)."""


def unasked_roles(
    overrides: tuple[str, ...],
    needs: dict[str, str],
    panel: bool,
    strategy: str,
    metrics: list[str],
) -> tuple[str, ...]:
    """A line per override of a role nothing in the job asks (``judge=gpt4``, ``judge.*``).

    The job would run without it, and its command line would read as judged or sampled.
    """
    out = []
    for override in overrides:
        role = override_key(override).split("@", 1)[0].split(".", 1)[0]  # judge@pkg, judge.x
        if role not in ASKED_BY_PLUGINS or role in needs or (role == JUDGE and panel):
            continue
        out.append(
            f"{override} has no effect: neither strategy={strategy} nor the metrics "
            f"({','.join(metrics) or 'none'}) ask the {role}; drop it, or add what asks it "
            f"({_askers(role)})"
        )
    return tuple(out)


def check_unused_roles(
    raw: dict[str, Any], needs: dict[str, str], overrides: tuple[str, ...]
) -> None:
    """A value the user gave a role nothing asks is still checked against its range.

    ``model.max_tokens=0`` with ``strategy=none`` once FINISHED without a word: the role was
    never built, so its checks never ran.
    """
    for role in MODEL_ROLES:
        block = raw.get(role)
        if role in needs or not isinstance(block, dict):
            continue
        given = {override_key(o).split(".", 1)[1] for o in overrides
                 if override_key(o).startswith(f"{role}.")}  # fmt: skip
        check_fields(ModelSpec, {k: v for k, v in block.items() if k in given}, role)


def unasked_model(
    raw: dict[str, Any],
    roles: dict[str, ModelSpec],
    overrides: tuple[str, ...],
    strategy: str,
    metrics: list[str],
) -> tuple[str, ...]:
    """A line per ``model=``/``model.*`` override that nothing uses.

    Neither the strategy asks the model nor any role falls back to it (``judge=same``): the
    job would run without it, and its command line would read as if it did not.
    """
    model = raw.get("model")
    if "model" in roles or not isinstance(model, dict):
        return ()
    ident = (model.get("name"), model.get("model"))
    same = [  # judge=same, evaluator=same: a role made of the model's definition
        raw[role] for role in roles
        if isinstance(raw.get(role), dict)
        and (raw[role].get("name"), raw[role].get("model")) == ident
    ]  # fmt: skip
    out = []
    for o in overrides:
        key = override_key(o).split("@", 1)[0]
        if key.split(".", 1)[0] != "model":
            continue
        setting = key.partition(".")[2]
        if same and (not setting or any(r.get(setting) == model.get(setting) for r in same)):
            continue  # the role takes this setting from the model
        out.append(
            f"{o} has no effect: strategy={strategy} summarizes nothing and no role of the "
            f"metrics ({','.join(metrics) or 'none'}) takes it from the model (as judge=same "
            "does); drop it"
        )
    return tuple(out)


def _askers(role: str) -> str:
    """The installed strategies and metrics whose ``ROLES`` name ``role`` (read on error only)."""
    found = []
    for kind in ("strategy", "metrics"):
        for name, plugin in sorted(available(kind).items()):
            try:
                asks = role in load(plugin).ROLES
            except Exception:  # noqa: BLE001 - a broken plugin is not this line's to report
                continue
            if asks:
                found.append(f"{kind}={name}")
    return ", ".join(found) or f"no installed strategy or metric asks the {role}"
