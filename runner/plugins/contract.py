"""What a strategy, metric or data loader module must declare, checked when it is loaded.

The orchestrator reads these declarations and never probes for anything else, so a module
that forgot one is refused with one line rather than read with a silent default (a missing
``PROMPT_DIRS`` would leave its prompts out of the fingerprint).

- strategy: ``ROLES``, ``IGNORES`` (run-level keys it does not read, with why),
  ``PROMPT_DIRS`` (its folders under ``prompts/`` beside the module) and
  ``summarize(chunks, <roles>, *, <params>)``; optionally ``trace_view(steps)``, how the
  viewer draws its trace (``runner/api/trace_view.py``; without one the steps are listed);
- metric: ``ROLES``, ``PROMPT_DIRS`` and ``setup(<roles>, *, <params>)``; optionally
  ``CATEGORIES``, ``((display label, value key), ...)``: the kinds of error its values count,
  recorded on the run for the viewer's legend and the report's error-type figure (its
  ``Metric``'s ``read_back`` and ``verdicts`` are checked when the job calls them);
- metric: optionally ``HUMAN``, a ``runner.api.HumanFormat``: its human-judgment format
  (``runner.api.human_format``), through which the core reads and records people's
  annotations in its name;
- metric: optionally ``HUMAN_TASKS``, a tuple of ``runner.api.HumanTask``: the kinds of
  Label Studio task people annotate for it (``python -m runner.annotate export KIND``);
- metric: optionally ``meta_tables(inputs)``, its tables of agreement with people for
  ``python -m runner.report meta=true`` (``runner.api.meta``: given people's judgments and
  the experiment's runs, it returns ``MetaTables``; the report checks what it returns);
- strategy or metric: optionally ``FILE_PARAMS``, the parameters whose value may name a
  file it reads (G-Eval's ``steps``): such a file's content is part of the fingerprint, as
  a ``*prompt_path`` file's is;
- strategy or metric: optionally ``PLUGIN_PARAMS``, parameter -> plugin kind: a parameter
  naming another plugin (SummIt's ``draft``), found and checked before the job starts and
  part of the fingerprint (``runner.api.lookup.plugin`` gets it at run time);
- strategy or metric: optionally ``VALUES``, value name -> ``runner.api.Value``: the facts
  about its values (title, range, direction, kind, series), recorded on the run;
- strategy or metric: optionally ``BATCH_ROLES``, the roles whose requests may wait in
  provider batches with ``<role>.batch=true`` (``runner/config/batching.py``; a strategy's
  default is none, a metric's every role);
- strategy or metric: optionally ``estimate(inputs)``, its calls per document
  (``StrategyEstimateInput``) or per summary (``MetricEstimateInput``) as
  ``runner.api.estimating`` ``Phase``s, each role a ``Guide``, its params complete (the older
  keyword form still runs, deprecated); without it ``estimate=true`` notes its calls as
  unknown;
- data loader: ``KEYS`` (the ``data.*`` keys it reads) and ``load(*, <keys>)`` returning
  a list of ``runner.api.Document``.

Only what a module declares is checked here. What its code returns when the job calls it
(a ``StrategyResult``, a ``Metric``, a ``MetricResult`` of numbers, the headline values) and
the exceptions it raises are the job's checks (``runner/run/plugin_calls.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from runner.api.contracts import CONTRACTS, members
from runner.api.human_format import HumanFormat
from runner.api.human_task import HumanTask
from runner.api.value import check_values

MODEL_ROLES = ("embedder", "evaluator", "judge", "model")
"""The model roles a plugin may ask for: each is a config group (``conf/<role>/``)."""
_ENTRY = {kind: members(kind)[1] for kind in CONTRACTS}
"""Each kind's entry function, as its Protocol (``runner.api.contracts``) declares it."""
_DECLARED = {kind: members(kind)[0] for kind in CONTRACTS}
"""Each kind's required constants, as its Protocol declares them."""


def check_contract(kind: str, module: Any) -> str | None:
    """The first way ``module`` breaks the contract of ``kind``, in words; None when it keeps it."""
    entry = _ENTRY[kind]
    missing = [n for n in (*_DECLARED[kind], entry) if not hasattr(module, n)]
    if missing:
        return f"missing {', '.join(missing)} (a {kind} module declares {_wanted(kind)})"
    function = getattr(module, entry)
    if not callable(function):
        return f"{entry} is not a function"
    if kind == "data":
        return _check_names("KEYS", module.KEYS) or _keywords_cover(function, module.KEYS)
    if kind == "strategy" and not callable(getattr(module, "trace_view", print)):
        return "trace_view is not a function (it is optional: remove it or define it)"
    if kind != "data" and not callable(getattr(module, "estimate", print)):
        return "estimate is not a function (it is optional: remove it or define it)"
    if kind == "metrics" and not callable(getattr(module, "meta_tables", print)):
        return "meta_tables is not a function (it is optional: remove it or define it)"
    human = getattr(module, "HUMAN", None)
    if kind == "metrics" and human is not None and not isinstance(human, HumanFormat):
        return "HUMAN must be a runner.api.HumanFormat (it is optional: remove it or define it)"
    if kind == "metrics" and hasattr(module, "HUMAN_TASKS"):
        problem = _check_tasks(module.HUMAN_TASKS)
        if problem:
            return problem
    if kind != "data" and hasattr(module, "VALUES"):
        problem = check_values(module.VALUES)
        if problem:
            return problem
    if kind == "metrics" and hasattr(module, "CATEGORIES"):
        problem = check_categories(module.CATEGORIES)
        if problem:
            return problem
    return (
        _check_roles(module.ROLES)
        or _check_batch_roles(module)
        or _check_names("PROMPT_DIRS", module.PROMPT_DIRS)
        or _check_names("FILE_PARAMS", getattr(module, "FILE_PARAMS", ()))
        or _check_plugin_params(getattr(module, "PLUGIN_PARAMS", {}))
        or (_check_ignores(module.IGNORES) if kind == "strategy" else None)
        or _check_signature(kind, function, module.ROLES)
    )


def required_names(kind: str) -> tuple[tuple[str, ...], str]:
    """What a module of ``kind`` must declare, and its entry function's name.

    ``--help`` reads them to tell a loose module's kind from its source, without importing it.
    """
    return _DECLARED[kind], _ENTRY[kind]


def _wanted(kind: str) -> str:
    return ", ".join((*_DECLARED[kind], _ENTRY[kind]))


def _check_roles(roles: Any) -> str | None:
    if not isinstance(roles, (tuple, list)) or not all(isinstance(r, str) for r in roles):
        return f"ROLES must be a tuple of role names, e.g. ('model',); got {roles!r}"
    unknown = [r for r in roles if r not in MODEL_ROLES]
    if unknown:
        return f"ROLES names {unknown[0]!r}, which is not a model role ({', '.join(MODEL_ROLES)})"
    return None


def _check_batch_roles(module: Any) -> str | None:
    """``BATCH_ROLES`` (optional): the roles whose requests may wait in provider batches."""
    if not hasattr(module, "BATCH_ROLES"):
        return None
    batch = module.BATCH_ROLES
    if isinstance(batch, str) or not isinstance(batch, (tuple, list)):
        return f"BATCH_ROLES must be a tuple of role names, e.g. ('model',); got {batch!r}"
    stray = [r for r in batch if r not in module.ROLES]
    if stray:
        return f"BATCH_ROLES names {stray[0]!r}, which is not in ROLES {tuple(module.ROLES)!r}"
    return None


def _check_names(what: str, names: Any) -> str | None:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        return f"{what} must be a tuple of names; got {names!r}"
    return None


def _check_plugin_params(params: Any) -> str | None:
    """``PLUGIN_PARAMS`` (optional): parameter -> the kind of plugin its value names."""
    kinds = ("strategy", "metrics", "data")
    if not isinstance(params, dict) or not all(
        isinstance(k, str) and v in kinds for k, v in params.items()
    ):
        return (
            "PLUGIN_PARAMS must be a dict of parameter -> plugin kind (strategy, metrics or "
            f"data), e.g. {{'draft': 'strategy'}}; got {params!r}"
        )
    return None


def check_categories(categories: Any) -> str | None:
    """What is wrong with a metric's ``CATEGORIES``; None when it is pairs of non-empty names."""
    if not isinstance(categories, (tuple, list)) or not all(
        isinstance(pair, (tuple, list))
        and len(pair) == 2
        and all(isinstance(n, str) and n for n in pair)
        for pair in categories
    ):
        return (
            "CATEGORIES must be a tuple of (display label, value key) pairs, e.g. "
            f"(('entity omission', 'type/entity_omission'),); got {categories!r}"
        )
    return None


def _check_ignores(ignores: Any) -> str | None:
    if not isinstance(ignores, dict) or not all(isinstance(v, str) for v in ignores.values()):
        return "IGNORES must be a dict of run-level key -> why it is not read (or {})"
    return None


def _check_signature(kind: str, function: Callable[..., Any], roles: Any) -> str | None:
    """Each role a parameter; a strategy's first parameter takes the chunks."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return f"{_ENTRY[kind]} has no readable signature"
    if kind == "strategy":
        first = next(iter(parameters.values()), None)
        if first is None or first.kind not in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD):
            return "summarize(chunks, <roles>, *, <params>) must take the chunks first"
    absent = [r for r in roles if r not in parameters]
    if absent:
        return f"{_ENTRY[kind]} has no parameter {absent[0]!r} for the role its ROLES declare"
    return None


def _keywords_cover(function: Callable[..., Any], keys: Any) -> str | None:
    parameters = inspect.signature(function).parameters
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return None  # load(**values) takes every key
    absent = [k for k in keys if k not in parameters]
    if absent:
        return f"load has no parameter {absent[0]!r} for the key its KEYS declare"
    return None


def _check_tasks(tasks: object) -> str | None:
    """``HUMAN_TASKS`` is a tuple of ``HumanTask`` with distinct kinds."""
    if not isinstance(tasks, tuple) or not all(isinstance(t, HumanTask) for t in tasks):
        return "HUMAN_TASKS must be a tuple of runner.api.HumanTask (it is optional)"
    kinds = [t.kind for t in tasks]
    twice = sorted({k for k in kinds if kinds.count(k) > 1})
    if twice:
        return f"HUMAN_TASKS declares the task kind {twice[0]!r} twice; give each kind once"
    return None
