"""``<role>.batch=true`` checked before any work: a batch API, and plugins that can wait.

A batch API must serve the role's model, and every plugin using the role must be able to wait
for batches.

A batch is worth its wait only when the requests in it do not need each other's answers. A
metric's requests about one summary usually do not (BooookScore's sentences, faithfulness
claims), so a metric can batch every role it uses unless it says otherwise; a strategy's
requests usually do (incremental's running summary, SummIt's rounds), so a strategy batches
only the roles it names. Either says so with ``BATCH_ROLES``; without such a check, a strategy
whose every step waits on the last would wait hours per step.
"""

from __future__ import annotations

from types import ModuleType

from runner.api.errors import ConfigError
from runner.llm.batch import unsupported
from runner.llm.spec import ModelSpec


def batch_roles(module: ModuleType, is_strategy: bool) -> tuple[str, ...]:
    """The roles whose requests ``module`` lets travel in batches (``BATCH_ROLES``)."""
    default: tuple[str, ...] = () if is_strategy else tuple(module.ROLES)
    return tuple(getattr(module, "BATCH_ROLES", default))


def check_batch(
    roles: dict[str, ModelSpec],
    strategy: tuple[str, ModuleType],
    metrics: dict[str, ModuleType],
    cache_enabled: bool,
) -> None:
    """Raise ``ConfigError`` with one line for the first role that cannot batch."""
    for role, spec in roles.items():
        if not spec.batch:
            continue
        reason = unsupported(spec, role)
        if reason:
            raise ConfigError(reason)
        if not cache_enabled:
            raise ConfigError(
                f"{role}.batch=true keeps each batch answer in the response cache and its "
                f"batches in the cache's ledger; set cache.enabled=true or drop {role}.batch"
            )
        name, module = strategy
        if role in module.ROLES and role not in batch_roles(module, is_strategy=True):
            raise ConfigError(
                f"{role}.batch=true: strategy={name} sends each {role} request after the answer "
                f"to the one before, so every batch would hold one request and wait up to 24 h "
                f"(it does not list '{role}' in BATCH_ROLES); drop {role}.batch, or batch the "
                f"judge: judge.batch=true"
            )
        for label, metric in metrics.items():
            if role in metric.ROLES and role not in batch_roles(metric, is_strategy=False):
                raise ConfigError(
                    f"{role}.batch=true: metric {label} asks its {role} one request after "
                    f"another (it leaves '{role}' out of BATCH_ROLES); drop {role}.batch"
                )
