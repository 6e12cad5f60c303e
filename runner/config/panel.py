"""A panel of judges: ``judges=[a,b,c]`` replaces ``judge`` with one role per member.

Each name is a judge alias (``conf/judge/<name>.yaml``, or ``judge/<name>.yaml`` of the
user's ``--config-dir``), composed as ``judge=<name>`` would be with the job's other
overrides, so ``judge.samples=3`` or ``judge.temperature=0.7`` apply to every member. Each
member becomes the role ``judge:<name>``: its own gateway, cost, usage, calls and estimate,
and its endpoint's limits shared as any role's. Every metric that asks a judge is set up
once per member, and its value is pooled across members (majority of a label, mean of a
number: "Replacing Judges with Juries", Verga et al. 2024).

Refused in one line: ``judges=[]``, one member (a panel needs two: ``judge=<name>`` is one
judge), a name twice, an alias no config folder has, and a strategy that asks the judge
itself (a panel judges the summaries, not the summarizing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from runner.api.errors import ConfigError

PANEL_KEY = "judges"
JUDGE = "judge"


def member_role(name: str) -> str:
    """The role of panel member ``name``: ``judge:<name>``."""
    return f"{JUDGE}:{name}"


def is_judge_role(role: str) -> bool:
    """``judge`` or a panel member's ``judge:<name>``."""
    return role == JUDGE or role.startswith(f"{JUDGE}:")


def panel_names(value: Any) -> tuple[str, ...]:
    """The members ``judges=`` names (none when unset), checked."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"judges={value} must be a list of judge aliases, e.g. judges=[gpt4,claude]"
        )
    names = tuple(value)
    if not names:
        raise ConfigError(
            "judges=[] names no judge; give two or more aliases (judges=[gpt4,claude]) or leave "
            "judges out for the one judge=<alias>"
        )
    if len(names) == 1:
        raise ConfigError(
            f"judges=[{names[0]}] has one member: a panel needs two or more; for one judge use "
            f"judge={names[0]}"
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"judges= names {twice[0]} twice; give each judge once")
    return names


def with_members(
    raw: dict[str, Any], overrides: Sequence[str], compose: Callable[[list[str]], dict[str, Any]]
) -> dict[str, Any]:
    """``raw`` with a ``judge:<name>`` block per member of ``judges=``.

    ``compose(overrides)`` gives the whole config composed with those overrides (Hydra's
    compose API in the job); each member's block is its ``judge``.
    """
    names = panel_names(raw.get(PANEL_KEY))
    if not names:
        return raw
    chosen = [o for o in overrides if _chooses_judge(o)]
    if chosen:  # the panel replaces it: dropped in silence, one of the two would be ignored
        alias = chosen[-1].partition("=")[2]
        also = f", or add {alias} to judges=[...]" if alias else ""
        raise ConfigError(
            f"{chosen[-1]} and judges=[{','.join(names)}] both choose the judge, and a panel "
            f"replaces judge=; drop {chosen[-1]}{also}"
        )
    kept = [o for o in overrides if not _sets(o, PANEL_KEY)]
    out = dict(raw)
    for name in names:
        try:
            composed = compose([*kept, f"{JUDGE}={name}"])
        except Exception as err:  # noqa: BLE001 - Hydra's MissingConfigException and kin
            if "judge/" in str(err) or "Could not find" in str(err):
                raise ConfigError(
                    f"judges=[{','.join(names)}]: no judge alias {name!r} (conf/judge/{name}.yaml, "
                    f"or judge/{name}.yaml in your --config-dir); check its spelling"
                ) from None
            raise
        out[member_role(name)] = dict(composed[JUDGE])
    return out


def override_key(override: str) -> str:
    """The key a command-line override sets: ``judge.samples`` of ``+judge.samples=3``."""
    return override.lstrip("+~").split("=", 1)[0]


def _sets(override: str, key: str) -> bool:
    return override_key(override) == key


def _chooses_judge(override: str) -> bool:
    """``judge=<alias>`` (a panel replaces it), not ``judge.<key>=...`` (which applies)."""
    return override_key(override) == JUDGE
