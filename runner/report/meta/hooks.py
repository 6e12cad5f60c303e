"""The meta tables the metrics declare: each built-in or installed metric's ``meta_tables``.

A metric module may declare ``meta_tables(inputs: runner.api.meta.MetaInput) ->
runner.api.meta.MetaTables`` (the faithfulness metric's tables of raters against people's
labels are one). The report asks every such hook, in the order of the metrics' names, with
people's judgments and the experiment's FINISHED runs that are not human runs, and writes the
tables they return beside its own. Only built-in and installed metrics are asked, as for the
file formats of people's judgments (``runner.human.claim_files``): a loose module in the
folder is a study's own code, imported only when a job names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

from runner.api.errors import DataError, RunnerError
from runner.api.meta import Boot, MetaInput, MetaTable, MetaTables, RunView
from runner.plugins.errors import PluginError
from runner.plugins.registry import available, load
from runner.reliability.panel import panel_member
from runner.report.meta.read import MetaInputs, artifact_text
from runner.report.read import read_scores
from runner.tracking.reader import RunRecord
from runner.tracking.tags import HUMAN_KIND, RUN_KIND_TAG

HOOK = "meta_tables"
TABLE_NAME = re.compile(r"meta_[a-z0-9_]+")
"""A table's name is its CSV file's stem in the report folder: ``meta_`` and a plain word."""
Hook = Callable[[MetaInput], object]


def metric_hooks() -> tuple[list[tuple[str, Hook]], list[str]]:
    """Every built-in and installed metric's ``meta_tables``, by name; and notes.

    A note names each metric that could not be imported: its tables, if any, are missing.
    """
    hooks: list[tuple[str, Hook]] = []
    notes: list[str] = []
    for name, plugin in sorted(available("metrics").items()):
        try:
            module = load(plugin)
        except PluginError as err:
            notes.append(f"metrics={name} could not be imported, so no meta table of its: {err}")
            continue
        hook = getattr(module, HOOK, None)
        if callable(hook):
            hooks.append((name, hook))
    return hooks, notes


def run_views(
    uri: str, records: Sequence[RunRecord], scores: Mapping[str, Mapping[str, Mapping[str, float]]]
) -> list[RunView]:
    """The FINISHED runs of ``records`` that are not human runs, with their values."""
    runs = [r for r in records if r.status == "FINISHED" and r.tags.get(RUN_KIND_TAG) != HUMAN_KIND]
    return views(uri, runs, scores)


def views(
    uri: str, runs: Sequence[RunRecord], scores: Mapping[str, Mapping[str, Mapping[str, float]]]
) -> list[RunView]:
    """``runs`` as ``RunView`` values.

    ``scores`` holds the values already read (the judged runs'), so they are not read twice;
    artifacts are read only when a hook asks for one.
    """
    unread = [r for r in runs if r.run_id not in scores]
    if unread:
        scores = {**read_scores(uri, unread), **scores}
    made = [
        RunView(
            r.run_id,
            r.start_time,
            r.params,
            scores.get(r.run_id, {}),
            partial(artifact_text, uri, r.run_id),
            r.run_name,
        )
        for r in runs
    ]
    return [each for view in made for each in panel_views(view)]


SHARED_ARTIFACTS = ("summaries.json", "config.yaml")
"""What every judge of a panel shares: the summaries and the config. A metric's own
artifacts (``claims.json``, ``annotations.json``) are its first member's alone."""


def panel_views(view: RunView) -> list[RunView]:
    """A panel run (``judges=``) as one view of the panel and one per member; else itself.

    Each view holds its judge's values under the metric's usual names (a member's
    ``<metric>:<name>/<value>`` renamed ``<metric>/<value>``) and names its judge in the
    ``judge`` and ``judge.model`` params, so a metric's tables give each member a row and the
    panel one, and a researcher sees whether the panel beats its best member. A view reads
    only the artifacts every member shares: a table built on a member's own artifacts (the
    claim-level one) leaves panel runs out rather than give the first member's as another's.
    """
    members = [m for m in view.params.get("judges", "").split(",") if m]
    if not members:
        return [view]
    shared = partial(_shared_only, view.read_text)
    judges = {m: _member_params(view.params, m) for m in members}
    panel = {
        doc: {k: v for k, v in values.items() if panel_member(k) is None}
        for doc, values in view.values.items()
    }
    together = {
        key: ", ".join(dict.fromkeys(j[key] for j in judges.values() if j.get(key)))
        for key in ("judge.model", "judge.temperature", "judge.samples")
    }
    together["judge.model"] = ", ".join(j["judge.model"] for j in judges.values())
    out = [
        replace(
            view,
            params={**view.params, **together, "judge": f"panel({','.join(members)})"},
            values=panel,
            read_text=shared,
        )
    ]
    for member, params in judges.items():
        mine = {doc: _members_values(values, member) for doc, values in view.values.items()}
        out.append(replace(view, params={**view.params, **params}, values=mine, read_text=shared))
    return out


def _member_params(params: Mapping[str, str], member: str) -> dict[str, str]:
    """A member's ``judge:<member>.*`` params as the one judge's ``judge.*`` (its identity)."""
    out = {"judge": member, "judge.model": params.get(f"judge:{member}.model", member)}
    for key in ("temperature", "samples"):
        out[f"judge.{key}"] = params.get(f"judge:{member}.{key}", "")
    return out


def _members_values(values: Mapping[str, float], member: str) -> dict[str, float]:
    """``<metric>:<member>/<value>`` of one document as ``<metric>/<value>``."""
    out = {}
    for key, value in values.items():
        found = panel_member(key)
        if found is not None and found[1] == member:
            out[found[0]] = value
    return out


def _shared_only(read: Callable[[str], str | None], name: str) -> str | None:
    return read(name) if name in SHARED_ARTIFACTS else None


def plugin_tables(
    uri: str,
    records: Sequence[RunRecord],
    inputs: MetaInputs,
    boot: Boot,
    reserved: Sequence[str],
    ppi: bool = False,
) -> tuple[list[MetaTable], list[str]]:
    """Every declared hook's tables and notes, checked: one line naming the metric otherwise.

    ``reserved``: the names of the report's own tables, which no metric's table may take.
    """
    hooks, notes = metric_hooks()
    if not hooks:
        return [], notes
    judged = views(uri, list(inputs.judged.values()), inputs.scores)
    runs = run_views(uri, records, inputs.scores)
    given = MetaInput(inputs.judgments, runs, boot, {r.run_id: r for r in judged}, ppi)
    tables: list[MetaTable] = []
    taken = {name: "the report" for name in reserved}
    for name, hook in hooks:
        made = _call(name, hook, given)
        for table in made.tables:
            if table.name in taken:
                raise DataError(
                    f"metrics={name}'s meta_tables returned a table named {table.name}, as "
                    f"{taken[table.name]} does: rename it"
                )
            taken[table.name] = f"metrics={name}"
        tables += made.tables
        notes += made.notes
    return tables, notes


def _call(name: str, hook: Hook, given: MetaInput) -> MetaTables:
    """The hook's result, or one line naming the metric and what went wrong."""
    try:
        made = hook(given)
    except RunnerError:
        raise
    except Exception as err:  # noqa: BLE001 - a plugin's failure, named with its metric
        raise DataError(
            f"metrics={name}'s meta_tables failed ({type(err).__name__}: {err}); fix or "
            "uninstall the plugin, or drop meta=true"
        ) from err
    problem = _problem(made)
    if problem:
        raise DataError(f"metrics={name}'s meta_tables {problem}")
    assert isinstance(made, MetaTables)
    return made


def _problem(made: object) -> str | None:
    """How a hook's result breaks ``MetaTables``, in words; None when it keeps it."""
    if not isinstance(made, MetaTables):
        return f"returned {type(made).__name__}, not runner.api.meta.MetaTables"
    for table in made.tables:
        if not isinstance(table, MetaTable):
            return f"returned a table of type {type(table).__name__}, not MetaTable"
        if not TABLE_NAME.fullmatch(table.name):
            return f"named a table {table.name!r}: a name is meta_ and lowercase words (meta_x)"
        if any(len(row) != len(table.header) for row in table.rows):
            return f"returned table {table.name} with a row whose length is not its header's"
    if not all(isinstance(n, str) for n in made.notes):
        return "returned a note that is not text"
    return None
