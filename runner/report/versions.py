"""Older versions of a cell: runs with a newer run's params but another fingerprint.

A cell is one experiment. When a plugin's file, a prompt or a plugin's version changes, the
params stay the same but the fingerprint does not, and a rerun makes a new run beside the old
one; pooling the two would average two experiments into one cell. So among runs with equal
experiment params (``is_setting`` ones aside), only those of the newest fingerprint
(latest start) are averaged and the older ones are listed as superseded, naming what changed.
Repeats and seeds differ in a param (``repeat``, ``seed``): they are cells of their own here
and still pool in the table.

What changed is read from the tag ``fingerprint.inputs`` (``runner.run.record_setup``:
digests of the config's parts, of each prompt file and each plugin's identity). A run logged
before that tag existed has only its ``plugin.<key>`` tags (target, origin, source digest);
when those say nothing either, the reason is "fingerprint changed".

A human run (``runner.kind=human``) has no fingerprint; one whose ``human.judged_run`` is a
superseded run judged the older version, so it leaves the table with it (listed, never
dropped silently). The meta-evaluation reads every human run regardless
(``runner.report.meta.read``), so its pairing of people with the judged run is unchanged.
Plain Python over ``RunRecord``s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from runner.config.overrides import is_setting
from runner.tracking.reader import RunRecord
from runner.tracking.tags import INPUTS_TAG

PLUGIN_TAG = "plugin."
"""Prefix of the tags naming each non-built-in plugin: ``target (origin), sha256 <12 hex>``."""
JUDGED_TAG = "human.judged_run"
UNKNOWN = "fingerprint changed (the runs do not record which input)"

CellKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Superseded:
    """A run left out because a newer version of its cell exists."""

    run: RunRecord
    newer: RunRecord
    """The newest run of the cell (the one averaged)."""
    changed: tuple[str, ...]
    """What differs between the two fingerprints' inputs, e.g. 'plugin file first_sent.py'."""
    judged: RunRecord | None = None
    """For a human run: the superseded run it judged (``run`` is then the human run)."""

    @property
    def reason(self) -> str:
        """The footnote's reason."""
        newer = f"{self.newer.run_name} ({self.newer.run_id[:8]})"
        if self.newer.status != "FINISHED":  # the cell stays empty until the newest finishes
            newer += f", {self.newer.status}: rerun it for this cell's number"
        if self.judged is None:
            head = f"older version of the cell of the newer {newer}"
        else:
            old = f"{self.judged.run_name} ({self.judged.run_id[:8]})"
            head = f"judged {old}, an older version of the cell of {newer}"
        return f"{head}; changed: {', '.join(self.changed)}"


def cell_key(run: RunRecord) -> CellKey:
    """The run's experiment params: equal for every version of one cell."""
    return tuple(sorted((k, v) for k, v in run.params.items() if not is_setting(k)))


def newest_versions(
    runs: Sequence[RunRecord], attempts: Sequence[RunRecord] = ()
) -> tuple[list[RunRecord], list[Superseded]]:
    """Split ``runs`` (newest first, one per fingerprint) into those kept and the older versions.

    ``attempts`` (newest first) are the runs that did not finish (FAILED, KILLED, RUNNING): a
    newer version among them still supersedes an older FINISHED one, so an edit whose run
    failed leaves its cell empty rather than showing the previous version's number as today's.
    Runs without a fingerprint are kept, except a human run that judged a superseded run.
    """
    finished_at: dict[CellKey, int] = {}
    for run in runs:
        if run.fingerprint:
            finished_at.setdefault(cell_key(run), run.start_time)
    newest: dict[CellKey, RunRecord] = {}
    for attempt in attempts:  # counts only when newer than the cell's newest finished run
        key = cell_key(attempt)
        if attempt.fingerprint and attempt.start_time > finished_at.get(key, -1):
            newest.setdefault(key, attempt)
    kept: list[RunRecord] = []
    older: list[Superseded] = []
    for run in runs:
        newer = newest.setdefault(cell_key(run), run) if run.fingerprint else run
        if newer is run or newer.fingerprint == run.fingerprint:
            kept.append(run)
        else:
            older.append(Superseded(run, newer, what_changed(run, newer)))
    by_id = {s.run.run_id: s for s in older}
    judged = [(run, by_id.get(run.tags.get(JUDGED_TAG, ""))) for run in kept]
    humans = [Superseded(run, s.newer, s.changed, s.run) for run, s in judged if s is not None]
    gone = {s.run.run_id for s in humans}
    return [r for r in kept if r.run_id not in gone], older + humans


def what_changed(old: RunRecord, new: RunRecord) -> tuple[str, ...]:
    """What differs between two versions' fingerprint inputs (``UNKNOWN`` when not recorded)."""
    before, after = recorded_inputs(old), recorded_inputs(new)
    if before is not None and after is not None:
        found = _config(before, after) + _prompts(before, after) + _plugins(before, after)
    else:
        found = _plugin_tags(old.tags, new.tags)
    return tuple(found) or (UNKNOWN,)


def recorded_inputs(run: RunRecord) -> dict[str, Any] | None:
    """The run's ``fingerprint.inputs`` tag as a dict; None when absent or unreadable."""
    text = run.tags.get(INPUTS_TAG)
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, '' | ' added' | ' removed') for each key whose value differs, sorted."""
    out = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            how = " added" if key not in before else " removed" if key not in after else ""
            out.append((key, how))
    return out


def _config(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    pairs = _changed_keys(before.get("config") or {}, after.get("config") or {})
    return [f"config {key}{how}" for key, how in pairs]


def _prompts(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    pairs = _changed_keys(before.get("prompts") or {}, after.get("prompts") or {})
    return [f"prompt {key}{how}" for key, how in pairs]


def _plugins(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """A plugin's target, its distribution's version, or its source file, per config key."""
    old_all, new_all = before.get("plugins") or {}, after.get("plugins") or {}
    out = []
    for key, how in _changed_keys(old_all, new_all):
        old, new = old_all.get(key) or {}, new_all.get(key) or {}
        if how or old.get("target") != new.get("target"):
            out.append(
                f"{key} plugin {old.get('target', '(built-in)')} -> "
                f"{new.get('target', '(built-in)')}"
            )
        elif old.get("version") != new.get("version"):
            out.append(f"{key} plugin version {old.get('version')} -> {new.get('version')}")
        else:
            out.append(f"{key} plugin file {_file_name(new.get('file') or new.get('target'))}")
    return out


def _file_name(path: Any) -> str:
    return PurePath(str(path)).name


def _plugin_tags(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What the ``plugin.<key>`` tags of runs without ``fingerprint.inputs`` tell apart."""
    old = {k[len(PLUGIN_TAG) :]: v for k, v in before.items() if k.startswith(PLUGIN_TAG)}
    new = {k[len(PLUGIN_TAG) :]: v for k, v in after.items() if k.startswith(PLUGIN_TAG)}
    out = []
    for key, _ in _changed_keys(old, new):
        was, now = (old.get(key) or "").rpartition(", sha256 ")[0], (new.get(key) or "")
        now = now.rpartition(", sha256 ")[0]
        if was and was == now and "(module file " in now:
            out.append(f"{key} plugin file {_file_name(now.split('(module file ')[1][:-1])}")
        else:
            out.append(f"{key} plugin {was or '(none)'} -> {now or '(none)'}")
    return out
